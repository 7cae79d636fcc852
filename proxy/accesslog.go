package proxy

import (
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func (p *Proxy) logAccess(ex *exchange, end time.Time) {
	ce := p.access.Check(zap.InfoLevel, "request")
	if ce == nil {
		return // the access log is off, or below its level
	}
	ce.Write(zap.Inline(&accessLine{ex: ex, end: end}))
}

// accessLine is one access-log line, encoded field by field: a slice of
// twelve zap.Fields was the largest allocation of a refusal.
type accessLine struct {
	ex  *exchange
	end time.Time
}

func (l *accessLine) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	ex, r := l.ex, &l.ex.line
	var ttfb time.Duration
	if !ex.FirstByte.IsZero() {
		ttfb = ex.FirstByte.Sub(ex.Start)
	}
	enc.AddString("request_id", ex.ID)
	enc.AddString("method", r.method)
	enc.AddString("path", r.path)
	enc.AddString("proto", r.proto)
	enc.AddInt64("status", int64(ex.out.status))
	enc.AddString("outcome", string(ex.Outcome))
	enc.AddDuration("queue_wait", ex.QueueWait)
	enc.AddDuration("ttfb", ttfb)
	enc.AddDuration("duration", l.end.Sub(ex.Start))
	enc.AddInt64("bytes_in", ex.bytesIn)
	enc.AddInt64("bytes_out", ex.out.bytes)
	enc.AddString("client", r.client)
	return nil
}
