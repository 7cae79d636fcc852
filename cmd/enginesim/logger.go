package main

import (
	"fmt"
	"io"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger builds the only logger of the process, as slotgate's: JSON or
// console on out, never sampled.
func newLogger(level, format string, out io.Writer) (*zap.Logger, error) {
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
	return zap.New(zapcore.NewCore(encoder, sink, lvl), zap.ErrorOutput(sink)).Named("enginesim"), nil
}

// logConfig logs the effective configuration once, each value with where
// it came from.
func logConfig(log *zap.Logger, c Config) {
	fields := []zap.Field{
		zap.String("listen", c.Listen), zap.String("model", c.Model),
		zap.Int("max_num_seqs", c.Engine.MaxNumSeqs), zap.Int("max_num_queued_reqs", c.Engine.MaxNumQueuedReqs),
		zap.Int("num_gpu_blocks", c.Engine.NumGPUBlocks), zap.Int("block_size", c.Engine.BlockSize),
		zap.Int("max_num_batched_tokens", c.Engine.MaxNumBatchedTokens),
		zap.Int("data_parallel_size", c.Engine.DataParallelSize), zap.Int("max_model_len", c.Engine.MaxModelLen),
		zap.Float64("speedup_ratio", c.Engine.SpeedupRatio), zap.String("metrics_dialect", string(c.Dialect)),
		zap.Uint64("seed", c.Seed), zap.String("log_level", c.LogLevel), zap.String("log_format", c.LogFormat),
	}
	for flag, src := range c.Sources {
		if src != "default" {
			fields = append(fields, zap.String(strings.ReplaceAll(flag, "-", "_")+"_from", src))
		}
	}
	log.Info("configuration", fields...)
}
