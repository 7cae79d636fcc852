package grpcproxy

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/slotgate/slotgate/gate"
)

// FuzzCodec passes arbitrary message bytes, in buffers cut at the bytes
// of cuts, through the proxy's codec: a frame comes out of Marshal with
// exactly the bytes that went into Unmarshal, and a second Marshal of it
// gives nothing (its buffers went with the first); the protobuf fallback,
// for the server's own services, never panics on any bytes.
func FuzzCodec(f *testing.F) {
	f.Add([]byte("\x0a\x05hello"), []byte{3})
	f.Add([]byte{}, []byte{})
	f.Add([]byte{0x08, 0x96, 0x01}, []byte{1, 1})
	f.Add([]byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, []byte{0})
	f.Add([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}, []byte{2})
	f.Add([]byte{0x0b, 0x0c}, []byte{}) // a group
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		var in mem.BufferSlice
		rest := data
		for _, c := range cuts {
			n := 0
			if len(rest) > 0 {
				n = int(c) % (len(rest) + 1)
			}
			in = append(in, mem.SliceBuffer(rest[:n]))
			rest = rest[n:]
		}
		in = append(in, mem.SliceBuffer(rest))

		var fr frame
		if err := (codec{}).Unmarshal(in, &fr); err != nil {
			t.Fatalf("Unmarshal into a frame: %v", err)
		}
		out, err := (codec{}).Marshal(&fr)
		if err != nil {
			t.Fatalf("Marshal of a frame: %v", err)
		}
		if got := out.Materialize(); !bytes.Equal(got, data) {
			t.Fatalf("frame of %q came out as %q", data, got)
		}
		again, err := (codec{}).Marshal(&fr)
		if err != nil || again.Len() != 0 {
			t.Fatalf("second Marshal of a frame: %d bytes, %v; want none", again.Len(), err)
		}
		out.Free()
		in.Free()

		for _, m := range []any{&emptypb.Empty{}, &durationpb.Duration{}} {
			if err := (codec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, m); err != nil {
				continue
			}
			b, err := (codec{}).Marshal(m)
			if err != nil {
				t.Fatalf("Marshal of %T decoded from %q: %v", m, data, err)
			}
			b.Free()
		}
	})
}

// FuzzMetadata feeds one arbitrary value under every key the proxy reads,
// and an arbitrary key: rankOf names a rank exactly when the trimmed value
// is a whole number of at least 0; contentSubtype gives a lower-case
// subtype only of an application/grpc+ content-type; endToEnd never lets
// a hop key or a pseudo-header through, and keeps every other key.
func FuzzMetadata(f *testing.F) {
	for _, s := range []string{"", "0", " 3 ", "-1", "+2", "007", "1e3", "99999999999999999999",
		"application/grpc+JSON; charset=utf-8", "application/grpc+", "application/grpc;+x", "application/grpc+proto"} {
		f.Add("x-custom", s)
	}
	f.Add(":authority", "proxy:1")
	f.Add("grpc-timeout", "1S")
	f.Add("Content-Type", "application/grpc")
	f.Add("x-bin-bin", "\x00\xff")
	f.Fuzz(func(t *testing.T, key, value string) {
		md := metadata.MD{RankKey: {value}, "content-type": {value}, key: {value}}
		rank, pinned := rankOf(md)
		n, err := strconv.Atoi(strings.TrimSpace(md[RankKey][0]))
		if wantPinned := err == nil && n >= 0; pinned != wantPinned || (pinned && rank != n) || (!pinned && rank != gate.Unpinned) {
			t.Fatalf("rankOf(%q) = %d, %v", md[RankKey][0], rank, pinned)
		}
		sub := contentSubtype(md)
		if sub != "" && (sub != strings.ToLower(sub) || !strings.HasPrefix(md["content-type"][0], "application/grpc+")) {
			t.Fatalf("contentSubtype(%q) = %q", md["content-type"][0], sub)
		}
		out := endToEnd(md)
		for k := range out {
			if hopKeys[k] || strings.HasPrefix(k, ":") {
				t.Fatalf("endToEnd let %q through", k)
			}
		}
		if _, ok := out[key]; !hopKeys[key] && !strings.HasPrefix(key, ":") && !ok {
			t.Fatalf("endToEnd dropped %q", key)
		}
	})
}
