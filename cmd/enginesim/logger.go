package main

import (
	"strings"

	"go.uber.org/zap"
)

// logConfig logs the effective configuration once, each value with where
// it came from.
func logConfig(log *zap.Logger, c Config) {
	fields := []zap.Field{
		zap.String("listen", c.Listen), zap.String("grpc_listen", c.GRPCListen), zap.String("model", c.Model),
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
