package proxy

import (
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/internal/logline"
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
	e := &accessEntry{line: accessLine{id: ex.ID, line: *line, status: status, outcome: ex.Outcome,
		queueWait: ex.QueueWait, ttfb: ttfb, duration: end.Sub(ex.Start), bytesIn: bytesIn, bytesOut: bytesOut}}
	e.field[0] = zap.Inline(&e.line)
	ce.Write(e.field[:]...)
}

// accessEntry is a line with the field that carries it to zap, in one
// allocation rather than two (the line, and Write's slice of one field).
// It is not reused: a core may keep the fields it was given (zap's
// observer does).
type accessEntry struct {
	line  accessLine
	field [1]zap.Field
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

// AppendJSONFields writes the line as MarshalLogObject has zap's JSON
// encoder write it, without the encoder (logline.JSONFields): a line a
// request, whose strings are nearly always plain (the client's request
// id and path among them), and zap's general encoder was most of the
// line's cost.
func (l *accessLine) AppendJSONFields(buf *buffer.Buffer) bool {
	r := &l.line
	for _, s := range [...]string{l.id, r.method, r.path, r.proto, string(l.outcome), r.client} {
		if !logline.Plain(s) {
			return false
		}
	}
	appendString(buf, `"request_id":"`, l.id)
	appendString(buf, `","method":"`, r.method)
	appendString(buf, `","path":"`, r.path)
	appendString(buf, `","proto":"`, r.proto)
	buf.AppendString(`","status":`)
	buf.AppendInt(int64(l.status))
	appendString(buf, `,"outcome":"`, string(l.outcome))
	// A duration AppendSeconds leaves (52 days and more) has zap write
	// the line: what was appended is dropped.
	buf.AppendString(`","queue_wait":`)
	if !logline.AppendSeconds(buf, l.queueWait) {
		return false
	}
	buf.AppendString(`,"ttfb":`)
	if !logline.AppendSeconds(buf, l.ttfb) {
		return false
	}
	buf.AppendString(`,"duration":`)
	if !logline.AppendSeconds(buf, l.duration) {
		return false
	}
	buf.AppendString(`,"bytes_in":`)
	buf.AppendInt(l.bytesIn)
	buf.AppendString(`,"bytes_out":`)
	buf.AppendInt(l.bytesOut)
	appendString(buf, `,"client":"`, r.client)
	buf.AppendByte('"')
	return true
}

func appendString(buf *buffer.Buffer, key, value string) {
	buf.AppendString(key)
	buf.AppendString(value)
}
