// Package httpsyntax holds the HTTP/1.1 grammar that slotgate checks on
// raw bytes, before net/http parses them: the proxy port's listener, which
// frames requests, and the proxy's early refusals, which answer some of
// them. It is the standard library's only, and keeps no state: its tables
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
func Token(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !tokenChars[c] {
			return false
		}
	}
	return true
}
