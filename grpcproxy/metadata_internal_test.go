package grpcproxy

import (
	"reflect"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/slotgate/slotgate/gate"
)

func TestContentSubtype(t *testing.T) {
	for _, tc := range []struct{ contentType, want string }{
		{"", ""},
		{"application/grpc", ""},
		{"application/grpc+proto", "proto"},
		{"application/grpc+JSON", "json"},
		{"application/grpc+json; charset=utf-8", "json"},
		{"application/grpc;x=y", ""},
		{"application/json", ""},
	} {
		if got := contentSubtype(metadata.Pairs("content-type", tc.contentType)); got != tc.want {
			t.Errorf("contentSubtype(%q) = %q, want %q", tc.contentType, got, tc.want)
		}
	}
}

func TestRankOf(t *testing.T) {
	for _, tc := range []struct {
		value  []string
		rank   int
		pinned bool
	}{
		{nil, gate.Unpinned, false},
		{[]string{"3"}, 3, true},
		{[]string{" 0 "}, 0, true},
		{[]string{"-1"}, gate.Unpinned, false},
		{[]string{"one"}, gate.Unpinned, false},
		{[]string{"2", "5"}, 2, true},
	} {
		md := metadata.MD{}
		if tc.value != nil {
			md[RankKey] = tc.value
		}
		if rank, pinned := rankOf(md); rank != tc.rank || pinned != tc.pinned {
			t.Errorf("rankOf(%q) = %d, %v; want %d, %v", tc.value, rank, pinned, tc.rank, tc.pinned)
		}
	}
}

// TestEndToEnd: the hop's own keys never cross the proxy; the rest do,
// values and order kept.
func TestEndToEnd(t *testing.T) {
	in := metadata.MD{
		":authority": {"proxy:1"}, "content-type": {"application/grpc"}, "user-agent": {"grpc-go"},
		"te": {"trailers"}, "grpc-timeout": {"1S"}, "grpc-accept-encoding": {"gzip"}, "grpc-encoding": {"gzip"},
		"grpc-status-details-bin": {"x"}, "connection": {"close"},
		"x-request-id": {"r"}, "x-custom": {"a", "b"}, "x-bin-bin": {"\x00"}, "grpc-trace-bin": {"t"},
	}
	want := metadata.MD{"x-request-id": {"r"}, "x-custom": {"a", "b"}, "x-bin-bin": {"\x00"}, "grpc-trace-bin": {"t"}}
	if got := endToEnd(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("endToEnd = %v, want %v", got, want)
	}
	if got := endToEnd(metadata.MD{"content-type": {"application/grpc"}}); got != nil {
		t.Fatalf("endToEnd of hop keys only = %v, want nil", got)
	}
}
