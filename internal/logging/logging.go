package logging

import (
	"fmt"
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns a logger named name that writes lines of level and above to
// out: "console" for zap's console format with capital levels, anything
// else for JSON (callers check the format with their other settings). It
// fails only for an unknown level.
func New(name, level, format string, out io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	enc.EncodeDuration = zapcore.SecondsDurationEncoder
	var encoder zapcore.Encoder
	if format == "console" {
		enc.EncodeLevel = zapcore.CapitalLevelEncoder
		encoder = zapcore.NewConsoleEncoder(enc)
	} else {
		encoder = zapcore.NewJSONEncoder(enc)
	}
	sink := zapcore.Lock(zapcore.AddSync(out))
	// zap.New, unlike zap.NewProduction, adds no sampler.
	return zap.New(zapcore.NewCore(encoder, sink, lvl), zap.ErrorOutput(sink)).Named(name), nil
}
