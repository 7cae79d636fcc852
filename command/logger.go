package command

import (
	"io"
	"runtime"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/config"
	"github.com/slotgate/slotgate/internal/logging"
)

// Access-log batching: lines wait at most accessFlushInterval, or until
// accessBufferSize bytes wait (about a thousand lines).
const (
	accessBufferSize    = 256 << 10
	accessFlushInterval = time.Second
)

// accessLog returns the access logger, named slotgate.access like a child
// of the main logger, and the function that flushes it and stops its
// flushing goroutine; a no-op logger when --access-log is false.
func accessLog(cfg config.Config, out io.Writer) (*zap.Logger, func() error, error) {
	if !cfg.AccessLog {
		return zap.NewNop(), func() error { return nil }, nil
	}
	log, stop, err := logging.Buffered("slotgate", cfg.LogLevel, cfg.LogFormat, out, accessBufferSize, accessFlushInterval)
	if err != nil {
		return nil, nil, err
	}
	return log.Named("access"), stop, nil
}

// logConfig logs the effective configuration once, each value with where
// it came from.
func logConfig(log *zap.Logger, c config.Config, opts Options) {
	src := func(flag string) zap.Field {
		return zap.String(strings.ReplaceAll(flag, "-", "_")+"_from", c.Sources[flag])
	}
	engine := ""
	if c.EngineURL != nil {
		engine = c.EngineURL.String()
	}
	log.Info("configuration",
		zap.String("version", opts.Version), zap.String("commit", opts.Commit),
		zap.Int("engine_request_limit", c.EngineRequestLimit), src("engine-request-limit"),
		zap.Int("engine_request_waiting_limit", c.EngineRequestWaitingLimit), src("engine-request-waiting-limit"),
		zap.Int("request_queue_limit", c.RequestQueueLimit), src("request-queue-limit"),
		zap.Int64("engine_prefill_token_limit", c.EnginePrefillTokenLimit),
		zap.Int64("request_queue_token_limit", c.RequestQueueTokenLimit),
		zap.Bool("per_rank_limits", c.PerRankLimits),
		zap.Int("overload_status_code", c.OverloadStatus), src("overload-status-code"),
		zap.Duration("queue_timeout", c.QueueTimeout), src("queue-timeout"),
		zap.Bool("queue_adaptive_lifo", c.QueueAdaptiveLIFO),
		zap.String("listen", c.Listen), zap.String("admin_listen", c.AdminListen),
		zap.String("engine_url", engine), zap.String("engine_health_path", c.EngineHealthPath),
		zap.Strings("passthrough_paths", c.PassthroughPaths),
		zap.Int64("max_request_body_bytes", c.MaxRequestBodyBytes),
		zap.Int64("max_buffered_body_bytes", c.MaxBufferedBodyBytes),
		zap.Duration("request_header_timeout", c.RequestHeaderTimeout),
		zap.Duration("request_body_timeout", c.RequestBodyTimeout),
		zap.Bool("front_end", c.FrontEnd),
		zap.String("stream_relay", c.StreamRelay),
		zap.Int("max_procs", runtime.GOMAXPROCS(0)), src("max-procs"),
		zap.Int("relay_loops", c.RelayLoops), src("relay-loops"),
		zap.Duration("first_token_timeout", c.FirstTokenTimeout),
		zap.Duration("first_token_timeout_per_1k_tokens", c.FirstTokenTimeoutPer1K),
		zap.Duration("retry_after", c.RetryAfter), zap.Bool("retry_after_auto", c.RetryAfterAuto),
		zap.Duration("shutdown_timeout", c.ShutdownTimeout), zap.Duration("drain_delay", c.DrainDelay),
		zap.String("log_level", c.LogLevel), zap.String("log_format", c.LogFormat),
		zap.Bool("capped", c.GateOn()),
		zap.Duration("engine_metrics_interval", c.EngineMetricsInterval),
		zap.String("engine_metrics_dialect", c.EngineMetricsDialect),
		zap.Bool("serve_engine_metrics", c.ServeEngineMetrics),
		// On or off only: the URL may carry NATS credentials.
		zap.Bool("dynamo_event_plane", c.DynamoEventPlane != ""),
		zap.Int64("kv_total_blocks", c.KVTotalBlocks), zap.Int64("block_size", c.BlockSize),
		zap.Int64("max_num_batched_tokens", c.MaxNumBatchedTokens), zap.Int("data_parallel_size", c.DataParallelSize),
		optional("active_decode_blocks_threshold", c.DecodeThreshold), src("active-decode-blocks-threshold"),
		optional("active_prefill_tokens_threshold", c.PrefillThreshold), src("active-prefill-tokens-threshold"),
		optional("active_prefill_tokens_threshold_frac", c.PrefillThresholdFrac), src("active-prefill-tokens-threshold-frac"),
		zap.Bool("reject_when_busy", c.RejectWhenBusy), zap.Bool("orca_header", c.ORCAHeader),
		zap.String("admin_grpc_listen", c.AdminGRPCListen), zap.String("model_name", c.ModelName),
		zap.String("admission_config", c.AdmissionConfig),
		zap.Bool("access_log", c.AccessLog), zap.Bool("enable_profiling", c.EnableProfiling),
	)
	if c.GateOn() {
		// Dynamo's start-up line, for those who grep for it.
		log.Info("Backend admission gate created",
			zap.Int("engine_request_limit", c.EngineRequestLimit),
			zap.Int("engine_request_waiting_limit", c.EngineRequestWaitingLimit),
			zap.Int("request_queue_limit", c.RequestQueueLimit), zap.Bool("per_rank", c.PerRankLimits))
	}
}

// optional logs a threshold, or null when it is off.
func optional[T any](key string, v *T) zap.Field {
	if v == nil {
		return zap.Reflect(key, nil)
	}
	return zap.Any(key, *v)
}
