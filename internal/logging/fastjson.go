package logging

import (
	"sync/atomic"
	"time"

	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"

	"github.com/slotgate/slotgate/internal/logline"
)

// fastJSON is zap's JSON encoder with a fast path for a line whose only
// field is logline.JSONFields, for the encoder configuration build gives JSON
// (lower-case levels, ISO 8601 times, no caller): the same bytes, written
// by hand. Everything else, and every clone (a logger With fields), is
// zap's encoder's.
type fastJSON struct {
	zapcore.Encoder // zap's, with no fields of its own
	pool            buffer.Pool
	stamp           atomic.Pointer[stamp]
}

func newFastJSON(cfg zapcore.EncoderConfig) *fastJSON {
	return &fastJSON{Encoder: zapcore.NewJSONEncoder(cfg), pool: buffer.NewPool()}
}

// Clone gives zap's encoder: fields added to a clone would be missed by
// the fast path.
func (f *fastJSON) Clone() zapcore.Encoder { return f.Encoder.Clone() }

// EncodeEntry writes ent by hand when its one field is JSONFields and
// every string of it is plain; zap's encoder writes the rest.
func (f *fastJSON) EncodeEntry(ent zapcore.Entry, fields []zapcore.Field) (*buffer.Buffer, error) {
	if len(fields) != 1 || fields[0].Type != zapcore.InlineMarshalerType || ent.Caller.Defined || ent.Stack != "" ||
		ent.Time.IsZero() || !logline.Plain(ent.LoggerName) || !logline.Plain(ent.Message) {
		return f.Encoder.EncodeEntry(ent, fields)
	}
	jf, ok := fields[0].Interface.(logline.JSONFields)
	if !ok {
		return f.Encoder.EncodeEntry(ent, fields)
	}
	buf := f.pool.Get()
	buf.AppendString(`{"level":"`)
	buf.AppendString(ent.Level.String())
	buf.AppendString(`","ts":"`)
	f.appendTime(buf, ent.Time)
	if ent.LoggerName != "" {
		buf.AppendString(`","logger":"`)
		buf.AppendString(ent.LoggerName)
	}
	buf.AppendString(`","msg":"`)
	buf.AppendString(ent.Message)
	buf.AppendString(`",`)
	if !jf.AppendJSONFields(buf) {
		buf.Free()
		return f.Encoder.EncodeEntry(ent, fields)
	}
	buf.AppendString("}\n")
	return buf, nil
}

// stamp is a second's ISO 8601 time, rendered once: what
// zapcore.ISO8601TimeEncoder writes but the milliseconds.
type stamp struct {
	unix       int64
	loc        *time.Location
	date, zone []byte // "2006-01-02T15:04:05" and "Z0700"; never written to once published
}

// appendTime appends t as zapcore.ISO8601TimeEncoder's layout,
// "2006-01-02T15:04:05.000Z0700", does: the second and the zone rendered
// once a second, the milliseconds (truncated, as Go's layouts do) by hand.
func (f *fastJSON) appendTime(buf *buffer.Buffer, t time.Time) {
	s := f.stamp.Load()
	if s == nil || s.unix != t.Unix() || s.loc != t.Location() {
		s = &stamp{unix: t.Unix(), loc: t.Location(),
			date: t.AppendFormat(nil, "2006-01-02T15:04:05"), zone: t.AppendFormat(nil, "Z0700")}
		f.stamp.Store(s)
	}
	ms := t.Nanosecond() / int(time.Millisecond)
	buf.AppendBytes(s.date)
	buf.AppendBytes([]byte{'.', byte('0' + ms/100), byte('0' + ms/10%10), byte('0' + ms%10)})
	buf.AppendBytes(s.zone)
}
