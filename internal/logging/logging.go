package logging

import (
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns a logger named name that writes lines of level and above to
// out: "console" for zap's console format with capital levels, anything
// else for JSON (callers check the format with their other settings). It
// fails only for an unknown level.
func New(name, level, format string, out io.Writer) (*zap.Logger, error) {
	return build(name, level, format, zapcore.Lock(zapcore.AddSync(out)))
}

// Buffered is New for a logger written at every request, the access log:
// its lines wait in a buffer of size bytes and go to out when it is full,
// every interval and when stop is called. One write per batch instead of
// one per line was a tenth of the CPU of a rejection (BENCHMARKS.md);
// Envoy flushes its access logs the same way, every second by default.
// The caller owns the flushing goroutine and must call stop, which
// flushes, before exiting; lines of a process that dies meanwhile are lost.
func Buffered(name, level, format string, out io.Writer, size int, interval time.Duration) (log *zap.Logger, stop func() error, err error) {
	sink := &zapcore.BufferedWriteSyncer{WS: zapcore.AddSync(out), Size: size, FlushInterval: interval}
	log, err = build(name, level, format, sink)
	if err != nil {
		return nil, nil, err
	}
	return log, sink.Stop, nil
}

// EncoderConfig is the JSON encoder's configuration of every logger New
// and Buffered build: zap's production keys and levels, ISO 8601 times,
// durations in seconds. The console format differs only in its levels.
func EncoderConfig() zapcore.EncoderConfig {
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	enc.EncodeDuration = zapcore.SecondsDurationEncoder
	return enc
}

func build(name, level, format string, sink zapcore.WriteSyncer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	enc := EncoderConfig()
	var encoder zapcore.Encoder
	if format == "console" {
		enc.EncodeLevel = zapcore.CapitalLevelEncoder
		encoder = zapcore.NewConsoleEncoder(enc)
	} else {
		encoder = newFastJSON(enc) // zap's JSON encoder, fast for the access log's lines
	}
	// zap.New, unlike zap.NewProduction, adds no sampler.
	return zap.New(zapcore.NewCore(encoder, sink, lvl), zap.ErrorOutput(sink)).Named(name), nil
}
