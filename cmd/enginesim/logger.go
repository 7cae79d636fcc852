package main

import (
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/slotgate/slotgate/sim"
)

// faultSet logs a fault set as the admin call's JSON names it.
type faultSet sim.FaultSet

func (f faultSet) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	for _, fld := range sim.FaultFields(sim.FaultSet(f)) {
		fld.AddTo(enc)
	}
	return nil
}

// logFinalStats logs the peaks since start, the last line of a run, so
// that a supervisor that restarts enginesim still learns them.
func logFinalStats(log *zap.Logger, st sim.Stats, injected map[sim.Fault]uint64) {
	counts := make(map[string]uint64, len(injected))
	for k, n := range injected {
		counts[string(k)] = n
	}
	log.Info("final stats",
		zap.Int("in_flight_max", st.InFlightMax), zap.Int("before_first_token_max", st.BeforeFirstTokenMax),
		zap.Int("in_flight", st.InFlight), zap.Int("before_first_token", st.BeforeFirstToken),
		zap.Any("faults_injected", counts))
}

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
		zap.Object("faults", faultSet(c.Faults)),
	}
	for flag, src := range c.Sources {
		if src != "default" {
			fields = append(fields, zap.String(strings.ReplaceAll(flag, "-", "_")+"_from", src))
		}
	}
	log.Info("configuration", fields...)
}
