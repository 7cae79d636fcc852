package httpsyntax_test

import (
	"testing"

	"github.com/slotgate/slotgate/internal/httpsyntax"
)

// TestToken checks Token against RFC 9110's tchar, byte by byte: every
// byte alone, and each inside an otherwise good token.
func TestToken(t *testing.T) {
	const tchar = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	in := make(map[byte]bool, len(tchar))
	for i := range len(tchar) {
		in[tchar[i]] = true
	}
	for c := range 256 {
		b := byte(c)
		if got := httpsyntax.Token([]byte{b}); got != in[b] || httpsyntax.Token(string(b)) != got {
			t.Errorf("Token(%q) = %v (of bytes), %v (of a string), want %v", b, got, httpsyntax.Token(string(b)), in[b])
		}
		if got := httpsyntax.Token([]byte{'a', b, 'z'}); got != in[b] {
			t.Errorf("Token(%q) = %v, want %v", []byte{'a', b, 'z'}, got, in[b])
		}
	}
	if httpsyntax.Token([]byte(nil)) || httpsyntax.Token("") {
		t.Error("Token of nothing = true, want false")
	}
}

// TestEqualFold: ASCII letters in either case match, nothing else does:
// not Unicode's folds, not a different length.
func TestEqualFold(t *testing.T) {
	for _, tc := range []struct {
		b     string
		lower string
		want  bool
	}{
		{"Content-Length", "content-length", true},
		{"CONTENT-LENGTH", "content-length", true},
		{"content-length", "content-length", true},
		{"Content-Lengt", "content-length", false},
		{"Content_Length", "content-length", false},
		{"trailerſ", "trailers", false}, // ſ folds to s in Unicode
		{"\u212aeep", "keep", false},    // the Kelvin sign folds to k
		{"chunked", "chunked", true},
		{"", "", true},
		{"@", "`", false}, // one below A and one below a: not letters
		{"[", "{", false},
	} {
		if got := httpsyntax.EqualFold([]byte(tc.b), tc.lower); got != tc.want || httpsyntax.EqualFold(tc.b, tc.lower) != got {
			t.Errorf("EqualFold(%q, %q) = %v (of bytes), %v (of a string), want %v", tc.b, tc.lower, got, httpsyntax.EqualFold(tc.b, tc.lower), tc.want)
		}
	}
}

// TestListOf: a list of one token, repeated or not, in any case, with
// blanks around its elements; nothing else, no empty element.
func TestListOf(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"keep-alive", true},
		{"Keep-Alive", true},
		{" keep-alive ,\tKEEP-ALIVE\t", true},
		{"keep-alive, close", false},
		{"close", false},
		{"", false},
		{"keep-alive,", false},
		{",keep-alive", false},
		{"keep-alive,,keep-alive", false},
		{"keep alive", false},
		{"keep-alivE x", false},
	} {
		if got := httpsyntax.ListOf([]byte(tc.v), "keep-alive"); got != tc.want || httpsyntax.ListOf(tc.v, "keep-alive") != got {
			t.Errorf("ListOf(%q) = %v (of bytes), %v (of a string), want %v", tc.v, got, httpsyntax.ListOf(tc.v, "keep-alive"), tc.want)
		}
	}
}

// TestDecimal: digits only, 1 to 18 of them.
func TestDecimal(t *testing.T) {
	for _, tc := range []struct {
		b    string
		n    int64
		want bool
	}{
		{"0", 0, true},
		{"007", 7, true},
		{"123456789012345678", 123456789012345678, true},
		{"1234567890123456789", 0, false},
		{"", 0, false},
		{"+1", 0, false},
		{"-1", 0, false},
		{"1,1", 0, false},
		{" 1", 0, false},
		{"1a", 0, false},
	} {
		if n, ok := httpsyntax.Decimal([]byte(tc.b)); ok != tc.want || ok && n != tc.n {
			t.Errorf("Decimal(%q) = %d, %v; want %d, %v", tc.b, n, ok, tc.n, tc.want)
		}
		if n, ok := httpsyntax.Decimal(tc.b); ok != tc.want || ok && n != tc.n {
			t.Errorf("Decimal of the string %q = %d, %v; want %d, %v", tc.b, n, ok, tc.n, tc.want)
		}
	}
}

// TestFieldValue: printable ASCII, spaces and tabs, nothing else: not
// CR, LF or another control byte, not DEL, not a byte past ASCII.
func TestFieldValue(t *testing.T) {
	for c := range 256 {
		b := byte(c)
		want := b == '\t' || (b >= ' ' && b <= '~')
		v := []byte{'a', b, 'z'}
		if got := httpsyntax.FieldValue(v); got != want || httpsyntax.FieldValue(string(v)) != got {
			t.Errorf("FieldValue(%q) = %v (of bytes), %v (of a string), want %v", v, got, httpsyntax.FieldValue(string(v)), want)
		}
	}
	if !httpsyntax.FieldValue("") || !httpsyntax.FieldValue([]byte(nil)) {
		t.Error("FieldValue of nothing = false, want true: an empty value is a value")
	}
}
