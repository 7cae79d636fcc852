package eventplane

import (
	"bytes"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// readHex reads a testdata file of hex bytes with "#" comments.
func readHex(t *testing.T, name string) []byte {
	t.Helper()
	text, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var digits strings.Builder
	for line := range strings.Lines(string(text)) {
		line, _, _ = strings.Cut(line, "#")
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

func TestEnvelopeGolden(t *testing.T) {
	want := readHex(t, "testdata/activeload.hex")
	id := PodInstanceID("worker-0")
	payload := ActiveLoad{WorkerID: id, DPRank: 1, KVUsedBlocks: 300}.Append(nil)
	got := Envelope{PublisherID: id, Sequence: 7, PublishedAt: 1_700_000_000_000, Topic: Topic, Payload: payload}.Append(nil)
	if !bytes.Equal(got, want) {
		t.Errorf("envelope bytes\n got %x\nwant %x", got, want)
	}
}

// TestIdleGolden checks the file the interop test compares a real
// server's message with.
func TestIdleGolden(t *testing.T) {
	want := readHex(t, "testdata/idle.hex")
	id := PodInstanceID("worker-0")
	payload := ActiveLoad{WorkerID: id}.Append(nil)
	got := Envelope{PublisherID: id, PublishedAt: 1_700_000_000_000, Topic: Topic, Payload: payload}.Append(nil)
	if !bytes.Equal(got, want) {
		t.Errorf("envelope bytes\n got %x\nwant %x", got, want)
	}
}

func TestAppendUint(t *testing.T) {
	tests := []struct {
		n    uint64
		want string
	}{
		{0, "00"}, {127, "7f"}, {128, "cc80"}, {255, "ccff"}, {256, "cd0100"}, {65535, "cdffff"},
		{65536, "ce00010000"}, {1<<32 - 1, "ceffffffff"}, {1 << 32, "cf0000000100000000"},
	}
	for _, tt := range tests {
		if got := hex.EncodeToString(appendUint(nil, tt.n)); got != tt.want {
			t.Errorf("appendUint(%d) = %s, want %s", tt.n, got, tt.want)
		}
	}
}

func TestAppendStrAndBinLengths(t *testing.T) {
	tests := []struct {
		n          int
		str, binHd string
	}{
		{0, "a0", "c400"}, {31, "bf", "c41f"}, {32, "d920", "c420"}, {255, "d9ff", "c4ff"},
		{256, "da0100", "c50100"}, {70000, "db00011170", "c600011170"},
	}
	for _, tt := range tests {
		s := strings.Repeat("x", tt.n)
		if got := hex.EncodeToString(appendStr(nil, s)[:len(tt.str)/2]); got != tt.str {
			t.Errorf("appendStr(%d bytes) header = %s, want %s", tt.n, got, tt.str)
		}
		if got := hex.EncodeToString(appendBin(nil, []byte(s))[:len(tt.binHd)/2]); got != tt.binHd {
			t.Errorf("appendBin(%d bytes) header = %s, want %s", tt.n, got, tt.binHd)
		}
	}
	if got := hex.EncodeToString(appendMapHeader(nil, 16)); got != "de0010" {
		t.Errorf("appendMapHeader(16) = %s", got)
	}
}

func TestSubject(t *testing.T) {
	tests := []struct {
		endpoint string
		want     string
	}{
		{"dyn://dynamo.backend.generate", "namespace.dynamo.component.backend.endpoint.generate.kv_metrics"},
		{"dynamo.backend.generate", "namespace.dynamo.component.backend.endpoint.generate.kv_metrics"},
		{"dyn://my-ns.vllm_worker.gen", "namespace.my-ns.component.vllm_worker.endpoint.gen.kv_metrics"},
		{"dyn://a*b.c>d.e/f", "namespace.a%2Ab.component.c%3Ed.endpoint.e%2Ff.kv_metrics"},
		{"dyn://ns:1.comp@x.ép", "namespace.ns%3A1.component.comp%40x.endpoint.%C3%A9p.kv_metrics"},
		{"dyn://a b.c%d.e~", "namespace.a%20b.component.c%25d.endpoint.e%7E.kv_metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint, func(t *testing.T) {
			e, err := ParseEndpoint(tt.endpoint)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.Subject(); got != tt.want {
				t.Errorf("Subject() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseEndpointRejects(t *testing.T) {
	for _, s := range []string{"", "dyn://", "dyn://a.b", "dyn://a.b.c.d", "dyn://a..c", "dyn://.b.c", "a.b."} {
		if _, err := ParseEndpoint(s); err == nil {
			t.Errorf("ParseEndpoint(%q) accepted", s)
		}
	}
}
