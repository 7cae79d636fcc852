package logging_test

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"

	"github.com/slotgate/slotgate/internal/logging"
	"github.com/slotgate/slotgate/internal/logline"
)

// line is a log line of three fields that writes itself (JSONFields), as
// the access log's does.
type line struct {
	id   string
	took time.Duration
	n    int64
}

func (l *line) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("id", l.id)
	enc.AddDuration("took", l.took)
	enc.AddInt64("n", l.n)
	return nil
}

func (l *line) AppendJSONFields(buf *buffer.Buffer) bool {
	if !logline.Plain(l.id) {
		return false
	}
	buf.AppendString(`"id":"`)
	buf.AppendString(l.id)
	buf.AppendString(`","took":`)
	if !logline.AppendSeconds(buf, l.took) {
		return false // what was appended is dropped
	}
	buf.AppendString(`,"n":`)
	buf.AppendInt(l.n)
	return true
}

// both encodes ent with l as its one field by the JSON logger's encoder
// and by zap's own JSON encoder, of the same configuration.
func both(t testing.TB, ent zapcore.Entry, l *line) (fast, plain string) {
	t.Helper()
	var sink strings.Builder
	log, err := logging.New("svc", "debug", "json", &sink)
	if err != nil {
		t.Fatal(err)
	}
	core := log.Core()
	if ce := core.Check(ent, nil); ce != nil {
		ce.Write(zap.Inline(l))
	}
	b, err := zapcore.NewJSONEncoder(logging.EncoderConfig()).EncodeEntry(ent, []zapcore.Field{zap.Inline(l)})
	if err != nil {
		t.Fatal(err)
	}
	return sink.String(), b.String()
}

// TestFastJSONMatchesZap: a line whose field writes itself is the same
// bytes as zap's JSON encoder makes of it, whichever writes it: plain
// values by hand, the others by zap.
func TestFastJSONMatchesZap(t *testing.T) {
	utc := time.Date(2026, 12, 6, 9, 14, 53, 492_999_999, time.UTC)
	east := time.FixedZone("east", 5*3600+30*60)
	for _, tc := range []struct {
		name string
		ent  zapcore.Entry
		l    line
	}{
		{"plain", zapcore.Entry{Level: zap.InfoLevel, Time: utc, LoggerName: "svc.access", Message: "request"}, line{"abc-1", 210 * time.Microsecond, 131}},
		{"a zone east", zapcore.Entry{Level: zap.WarnLevel, Time: utc.In(east), LoggerName: "svc", Message: "m"}, line{"x", 0, 0}},
		{"whole seconds", zapcore.Entry{Level: zap.InfoLevel, Time: utc, Message: "m"}, line{"x", 3 * time.Second, -1}},
		{"a nanosecond", zapcore.Entry{Level: zap.InfoLevel, Time: utc, Message: "m"}, line{"x", time.Nanosecond, 1}},
		{"negative", zapcore.Entry{Level: zap.InfoLevel, Time: utc, Message: "m"}, line{"x", -1500 * time.Millisecond, 1}},
		{"the longest written by hand", zapcore.Entry{Level: zap.InfoLevel, Time: utc, Message: "m"}, line{"x", 1<<52 - 1, 1}},
		{"too long: zap's", zapcore.Entry{Level: zap.InfoLevel, Time: utc, Message: "m"}, line{"x", 1 << 53, 1}},
		{"an id to escape: zap's", zapcore.Entry{Level: zap.InfoLevel, Time: utc, Message: "m"}, line{"a\"b\\c\n\x01é\xff", 1, 1}},
		{"a message to escape: zap's", zapcore.Entry{Level: zap.InfoLevel, Time: utc, Message: "say \"hi\""}, line{"x", 1, 1}},
		{"a caller: zap's", zapcore.Entry{Level: zap.InfoLevel, Time: utc, Message: "m", Caller: zapcore.NewEntryCaller(0, "f.go", 7, true)}, line{"x", 1, 1}},
		{"a stack: zap's", zapcore.Entry{Level: zap.ErrorLevel, Time: utc, Message: "m", Stack: "goroutine 1"}, line{"x", 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast, plain := both(t, tc.ent, &tc.l)
			if fast != plain {
				t.Errorf("wrote\n%s\nzap's JSON encoder writes\n%s", fast, plain)
			}
		})
	}
}

// TestFastJSONClones: a logger with fields of its own (With) writes them,
// as zap does: its encoder is zap's.
func TestFastJSONClones(t *testing.T) {
	var sink strings.Builder
	log, err := logging.New("svc", "info", "json", &sink)
	if err != nil {
		t.Fatal(err)
	}
	log.With(zap.String("pod", "p-1")).Info("m", zap.Inline(&line{"x", 1, 2}))
	if want := `"msg":"m","pod":"p-1","id":"x","took":0.000000001,"n":2}`; !strings.Contains(sink.String(), want) {
		t.Errorf("wrote %s, want %s in it", sink.String(), want)
	}
}

// FuzzFastJSON: any id, duration, count and time: the same bytes as zap's
// JSON encoder.
func FuzzFastJSON(f *testing.F) {
	f.Add("abc-1", int64(210_000), int64(131), int64(1796548493_492_000_000), "svc.access", "request")
	f.Add("a\"b", int64(-1), int64(0), int64(0), "", "")
	f.Add("x", int64(1<<52), int64(-7), int64(-1), "a b", "m\n")
	f.Fuzz(func(t *testing.T, id string, took, n, unixNano int64, name, msg string) {
		ent := zapcore.Entry{Level: zap.InfoLevel, Time: time.Unix(0, unixNano).UTC(), LoggerName: name, Message: msg}
		fast, plain := both(t, ent, &line{id, time.Duration(took), n})
		if fast != plain {
			t.Errorf("wrote\n%s\nzap's JSON encoder writes\n%s", fast, plain)
		}
	})
}
