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
		if got := httpsyntax.Token([]byte{b}); got != in[b] {
			t.Errorf("Token(%q) = %v, want %v", b, got, in[b])
		}
		if got := httpsyntax.Token([]byte{'a', b, 'z'}); got != in[b] {
			t.Errorf("Token(%q) = %v, want %v", []byte{'a', b, 'z'}, got, in[b])
		}
	}
	if httpsyntax.Token(nil) {
		t.Error("Token of nothing = true, want false")
	}
}
