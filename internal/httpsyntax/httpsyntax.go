// Package httpsyntax holds the HTTP/1.1 grammar that slotgate checks on
// raw bytes, before net/http parses them: the proxy port's listener, which
// frames requests, the proxy's early refusals, which answer some of
// them, and the engine client, which reads the common answer's head. Each
// function takes a string or bytes. It is the standard library's only, and keeps no state: its tables
// are read-only.
package httpsyntax

// tokenChars marks the bytes of RFC 9110's tchar: printable ASCII but for
// the delimiters.
var tokenChars = func() (t [256]bool) {
	for c := '!'; c <= '~'; c++ {
		t[c] = true
	}
	for _, c := range `"(),/:;<=>?@[\]{}` {
		t[c] = false
	}
	return t
}()

// Token reports whether b is an HTTP token, as a method or a header name
// must be.
func Token[T ~string | ~[]byte](b T) bool {
	if len(b) == 0 {
		return false
	}
	for i := range len(b) {
		if !tokenChars[b[i]] {
			return false
		}
	}
	return true
}

// EqualFold reports whether b is lower (a lower-case ASCII string) with
// its ASCII letters in either case: header names and the values HTTP
// compares without case. Unicode's folds (ſ for s, K for k) do not count.
func EqualFold[T ~string | ~[]byte](b T, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// ListOf reports whether v, a comma-separated list, names lower (a
// lower-case ASCII token) and nothing else: every element, spaces and
// tabs around it aside, is lower in either case. An empty element is
// something else: "", "a," and ",a" are not lists of a alone.
func ListOf[T ~string | ~[]byte](v T, lower string) bool {
	start := 0
	for i := 0; i <= len(v); i++ {
		if i < len(v) && v[i] != ',' {
			continue
		}
		if !EqualFold(trimBlank(v[start:i]), lower) {
			return false
		}
		start = i + 1
	}
	return true
}

// trimBlank cuts the spaces and tabs at both ends of b.
func trimBlank[T ~string | ~[]byte](b T) T {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// Decimal parses a Content-Length: 1 to 18 digits, no sign, no list.
func Decimal[T ~string | ~[]byte](b T) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for i := range len(b) {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// FieldValue reports whether b holds only printable ASCII, spaces and
// tabs: a header value (or a reason phrase) of the plain shape, which
// every HTTP/1.1 reader takes alike. Control bytes and bytes past ASCII
// are left to net/http.
func FieldValue[T ~string | ~[]byte](b T) bool {
	for i := range len(b) {
		if c := b[i]; (c < ' ' && c != '\t') || c > '~' {
			return false
		}
	}
	return true
}
