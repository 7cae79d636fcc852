package proxy

import (
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/slotgate/slotgate/gate"
)

func (p *Proxy) logAccess(ex *exchange, end time.Time) {
	p.writeAccess(&ex.Exchange, &ex.line, ex.out.status, ex.bytesIn, ex.out.bytes, end)
}

// writeAccess writes the access-log line of a request that ended at end,
// when the access log is on.
func (p *Proxy) writeAccess(ex *gate.Exchange, line *requestLine, status int, bytesIn, bytesOut int64, end time.Time) {
	ce := p.access.Check(zap.InfoLevel, "request")
	if ce == nil {
		return // the access log is off, or below its level
	}
	var ttfb time.Duration
	if !ex.FirstByte.IsZero() {
		ttfb = ex.FirstByte.Sub(ex.Start)
	}
	ce.Write(zap.Inline(&accessLine{id: ex.ID, line: *line, status: status, outcome: ex.Outcome,
		queueWait: ex.QueueWait, ttfb: ttfb, duration: end.Sub(ex.Start), bytesIn: bytesIn, bytesOut: bytesOut}))
}

// accessLine is one access-log line, encoded field by field: a slice of
// twelve zap.Fields was the largest allocation of a refusal. It holds its
// values rather than the exchange, so that an exchange that is not logged
// need not live on the heap for the line's sake.
type accessLine struct {
	id                        string
	line                      requestLine
	status                    int
	outcome                   gate.Outcome
	queueWait, ttfb, duration time.Duration
	bytesIn, bytesOut         int64
}

func (l *accessLine) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	r := &l.line
	enc.AddString("request_id", l.id)
	enc.AddString("method", r.method)
	enc.AddString("path", r.path)
	enc.AddString("proto", r.proto)
	enc.AddInt64("status", int64(l.status))
	enc.AddString("outcome", string(l.outcome))
	enc.AddDuration("queue_wait", l.queueWait)
	enc.AddDuration("ttfb", l.ttfb)
	enc.AddDuration("duration", l.duration)
	enc.AddInt64("bytes_in", l.bytesIn)
	enc.AddInt64("bytes_out", l.bytesOut)
	enc.AddString("client", r.client)
	return nil
}
