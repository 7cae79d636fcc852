package proxy

import (
	"net/http"
	"testing"
)

// TestTakesTrailers: an HTTP/1.1 client takes trailers when its TE lists
// "trailers", ASCII case aside; a Unicode fold of it (trailerſ) is
// another word, as for ReverseProxy's TE rule.
func TestTakesTrailers(t *testing.T) {
	tests := []struct {
		te   []string
		want bool
	}{
		{nil, false},
		{[]string{"trailers"}, true},
		{[]string{"gzip, TRAILERS"}, true},
		{[]string{"deflate", " trailers ;q=1"}, true},
		{[]string{"trailerſ"}, false},
		{[]string{"trailer"}, false},
	}
	for _, tc := range tests {
		r := &http.Request{ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}}
		if tc.te != nil {
			r.Header["Te"] = tc.te
		}
		if got := takesTrailers(r); got != tc.want {
			t.Errorf("TE %q: takesTrailers = %v, want %v", tc.te, got, tc.want)
		}
	}
}
