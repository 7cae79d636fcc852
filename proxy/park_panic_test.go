package proxy_test

import (
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/internal/testlog"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/proxy"
)

// panickingCore is an access log that panics on the line of one path:
// code that breaks as an exchange ends.
type panickingCore struct {
	zapcore.Core
	path string
}

func (c panickingCore) Enabled(zapcore.Level) bool { return true }

func (c panickingCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	return ce.AddCore(e, c)
}

func (c panickingCore) With([]zapcore.Field) zapcore.Core { return c }

func (c panickingCore) Write(_ zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	if enc.Fields["path"] == c.path {
		panic("access log: broken on " + c.path)
	}
	return nil
}

// TestParkedPanicKeepsServing: a parked request whose client leaves is
// ended on the relay's watch goroutine, which nobody else recovers; a
// panic there (its access-log line breaks) is logged by the gate, and the
// process goes on: the test binary survives, the queue is empty, and the
// proxy serves the next request once the slot is free.
func TestParkedPanicKeepsServing(t *testing.T) {
	held := newHeldEngine()
	gateLog := testlog.New()
	h := newRelayHarness(t, harnessConfig{
		engine: held,
		limits: limiter.Options{Slots: 1, QueueLen: 1},
		gate: func(o *gate.Options) {
			o.Logger = slog.New(slog.NewTextHandler(gateLog, nil))
		},
		options: func(o *proxy.Options) {
			o.AccessLog = zap.New(panickingCore{Core: zapcore.NewNopCore(), path: "/v1/boom"})
		},
	})
	holder := h.hold(held, "/v1/hold")
	c, _ := h.rawConn()
	body := `{"model":"m","prompt":"hi"}`
	req := "POST /v1/boom HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	h.waitStats("the request to wait", func(s limiter.Stats) bool { return s.Waiting == 1 })
	_ = c.Close() // the client leaves: the watch ends the parked exchange
	h.waitStats("the queue to empty", func(s limiter.Stats) bool { return s.Waiting == 0 && s.CancelledWaiting == 1 })
	if line := gateLog.WaitFor(t, "parked request panicked", bound); !strings.Contains(line, "access log: broken on /v1/boom") {
		t.Errorf("the gate's log line lacks the panic's value: %s", line)
	}
	held.release()
	if r := receive(t, "the holder's answer", holder); r.err != nil || r.status != http.StatusOK {
		t.Fatalf("holder: %d %v", r.status, r.err)
	}
	if r := h.get("/v1/after"); r.err != nil || r.status != http.StatusOK {
		t.Fatalf("the request after: %d %v", r.status, r.err)
	}
	if s := h.lim.Stats(); s.Holding != 0 || s.Waiting != 0 {
		t.Errorf("after all: %+v", s)
	}
}
