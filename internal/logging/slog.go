package logging

import (
	"context"
	"log/slog"
	"runtime"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Slog returns a *slog.Logger that writes through log, for the packages
// that log with the standard library's slog (load): one format, one
// destination, one level for the whole process.
func Slog(log *zap.Logger) *slog.Logger {
	return slog.New(&zapHandler{log: log})
}

// zapHandler is a slog.Handler over a zap.Logger. Groups prefix the keys
// of the attributes inside them, joined with dots.
type zapHandler struct {
	log    *zap.Logger
	prefix string
}

func (h *zapHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.Core().Enabled(zapLevel(l))
}

func (h *zapHandler) Handle(_ context.Context, r slog.Record) error {
	fields := make([]zap.Field, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, h.field(a))
		return true
	})
	if ce := h.log.Check(zapLevel(r.Level), r.Message); ce != nil {
		if ce.Caller.Defined && r.PC != 0 {
			// The caller is slog's, not this handler's.
			f, _ := runtime.CallersFrames([]uintptr{r.PC}).Next()
			ce.Caller = zapcore.NewEntryCaller(r.PC, f.File, f.Line, true)
		}
		ce.Write(fields...)
	}
	return nil
}

func (h *zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	fields := make([]zap.Field, len(attrs))
	for i, a := range attrs {
		fields[i] = h.field(a)
	}
	return &zapHandler{log: h.log.With(fields...), prefix: h.prefix}
}

func (h *zapHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &zapHandler{log: h.log, prefix: h.prefix + name + "."}
}

func (h *zapHandler) field(a slog.Attr) zap.Field {
	v := a.Value.Resolve()
	key := h.prefix + a.Key
	switch v.Kind() {
	case slog.KindString:
		return zap.String(key, v.String())
	case slog.KindInt64:
		return zap.Int64(key, v.Int64())
	case slog.KindBool:
		return zap.Bool(key, v.Bool())
	case slog.KindDuration:
		return zap.Duration(key, v.Duration())
	case slog.KindTime:
		return zap.Time(key, v.Time())
	}
	if err, ok := v.Any().(error); ok {
		return zap.NamedError(key, err)
	}
	return zap.Any(key, v.Any())
}

func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelError:
		return zapcore.ErrorLevel
	case l >= slog.LevelWarn:
		return zapcore.WarnLevel
	case l >= slog.LevelInfo:
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}
