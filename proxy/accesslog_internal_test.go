package proxy

import (
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/internal/logging"
)

// BenchmarkAccessLine: one access-log line of a served request, as the
// program writes it (JSON, batched).
func BenchmarkAccessLine(b *testing.B) {
	for _, format := range []string{"json", "console"} {
		b.Run(format, func(b *testing.B) {
			log, stop, err := logging.Buffered("slotgate", "info", format, io.Discard, 256<<10, time.Second)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = stop() }()
			p := &Proxy{access: log.Named("access")}
			start := time.Now()
			ex := &gate.Exchange{ID: "0a1b2c3d4e5f-123456", Outcome: gate.AdmittedDirect, Start: start, FirstByte: start.Add(180 * time.Microsecond)}
			line := requestLine{method: "POST", path: "/v1/completions", proto: "HTTP/1.1", client: "127.0.0.1:54321"}
			b.ReportAllocs()
			for b.Loop() {
				p.writeAccess(ex, &line, 200, 44, 131, start.Add(210*time.Microsecond))
			}
		})
	}
}

// FuzzAccessLine: an access-log line written by hand (AppendJSONFields)
// is the same bytes as zap's JSON encoder makes of MarshalLogObject,
// whatever the client sent as its request id and path.
func FuzzAccessLine(f *testing.F) {
	f.Add("0a1b2c3d4e5f-123456", "/v1/completions", "127.0.0.1:54321", 200, int64(1500), int64(180_000), int64(210_000), int64(44), int64(131))
	f.Add("id with \"quotes\"", "/caf\xc3\xa9", "[::1]:1", 529, int64(0), int64(0), int64(-5), int64(-1), int64(0))
	f.Add("", "/", "", 0, int64(1<<52), int64(1<<53), int64(1), int64(0), int64(1<<62))
	f.Fuzz(func(t *testing.T, id, path, client string, status int, wait, ttfb, took, in, out int64) {
		l := accessLine{id: id, line: requestLine{method: "POST", path: path, proto: "HTTP/1.1", client: client},
			status: status, outcome: gate.AdmittedDirect, queueWait: time.Duration(wait), ttfb: time.Duration(ttfb),
			duration: time.Duration(took), bytesIn: in, bytesOut: out}
		ent := zapcore.Entry{Level: zap.InfoLevel, Time: time.Unix(0, 1796548493_492_000_000).UTC(), LoggerName: "slotgate.access", Message: "request"}
		var sink strings.Builder
		log, err := logging.New("x", "info", "json", &sink)
		if err != nil {
			t.Fatal(err)
		}
		if ce := log.Core().Check(ent, nil); ce != nil {
			ce.Write(zap.Inline(&l))
		}
		want, err := zapcore.NewJSONEncoder(logging.EncoderConfig()).EncodeEntry(ent, []zapcore.Field{zap.Inline(&l)})
		if err != nil {
			t.Fatal(err)
		}
		if sink.String() != want.String() {
			t.Errorf("wrote\n%s\nzap's JSON encoder writes\n%s", sink.String(), want.String())
		}
	})
}

// TestAccessLineByHand: a request's usual line, plain strings and short
// durations, is written by hand, not left to zap's encoder.
func TestAccessLineByHand(t *testing.T) {
	l := accessLine{id: "0a1b2c3d4e5f-1", line: requestLine{method: "POST", path: "/v1/completions", proto: "HTTP/1.1", client: "127.0.0.1:1"},
		status: 200, outcome: gate.AdmittedDirect, queueWait: 0, ttfb: time.Millisecond, duration: 3 * time.Second}
	buf := buffer.NewPool().Get()
	if !l.AppendJSONFields(buf) {
		t.Fatal("a plain line was left to zap's encoder")
	}
	want := `"request_id":"0a1b2c3d4e5f-1","method":"POST","path":"/v1/completions","proto":"HTTP/1.1","status":200,` +
		`"outcome":"admitted_direct","queue_wait":0,"ttfb":0.001,"duration":3,"bytes_in":0,"bytes_out":0,"client":"127.0.0.1:1"`
	if got := buf.String(); got != want {
		t.Errorf("wrote\n%s\nwant\n%s", got, want)
	}
	l.id = "quote\""
	if buf.Reset(); l.AppendJSONFields(buf) {
		t.Error("a request id to escape was written by hand")
	}
}
