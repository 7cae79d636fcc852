package config

import (
	"flag"
	"net/url"
	"strings"
	"time"

	"github.com/slotgate/slotgate/internal/flagenv"
)

// DefaultOverloadStatus is the status of a capacity rejection when
// DYN_HTTP_OVERLOAD_STATUS_CODE is unset or unusable, as in Dynamo.
const DefaultOverloadStatus = 529

// Config is slotgate's validated configuration. Each field names its flag
// and environment variable; the defaults are in settings.go.
type Config struct {
	// EngineRequestLimit is N (--engine-request-limit,
	// DYN_ENGINE_REQUEST_LIMIT). Zero means unset: no cap.
	EngineRequestLimit int
	// RequestQueueLimit is Q (--request-queue-limit,
	// DYN_DYNAMO_REQUEST_QUEUE_LIMIT, default 16). Zero when N is unset.
	RequestQueueLimit int
	// OverloadStatus is the status of capacity rejections
	// (--overload-status-code, DYN_HTTP_OVERLOAD_STATUS_CODE, default 529).
	OverloadStatus int
	// QueueTimeout bounds the queue wait (--queue-timeout,
	// SLOTGATE_QUEUE_TIMEOUT); zero means none.
	QueueTimeout time.Duration
	// Listen is the proxy address (--listen, SLOTGATE_LISTEN, ":8080").
	Listen string
	// EngineURL is the engine's base URL (--engine-url, SLOTGATE_ENGINE_URL).
	EngineURL *url.URL
	// AdminListen is the admin address (--admin-listen,
	// SLOTGATE_ADMIN_LISTEN, ":9090").
	AdminListen string
	// EngineHealthPath is polled for readiness (--engine-health-path,
	// SLOTGATE_ENGINE_HEALTH_PATH, "/health").
	EngineHealthPath string
	// PassthroughPaths are proxied without a slot (--passthrough-paths,
	// SLOTGATE_PASSTHROUGH_PATHS).
	PassthroughPaths []string
	// MaxRequestBodyBytes bounds request bodies (--max-request-body-bytes,
	// SLOTGATE_MAX_REQUEST_BODY_BYTES, 32 MiB).
	MaxRequestBodyBytes int64
	// RetryAfter is sent with overload answers (--retry-after,
	// SLOTGATE_RETRY_AFTER, 1s); zero sends none.
	RetryAfter time.Duration
	// ShutdownTimeout bounds the final drain (--shutdown-timeout,
	// SLOTGATE_SHUTDOWN_TIMEOUT, 60s).
	ShutdownTimeout time.Duration
	// DrainDelay is how long new requests are still served after a drain
	// starts (--drain-delay, SLOTGATE_DRAIN_DELAY, 5s).
	DrainDelay time.Duration
	// EngineMetricsInterval is the engine scrape period
	// (--engine-metrics-interval, SLOTGATE_ENGINE_METRICS_INTERVAL, 200ms).
	EngineMetricsInterval time.Duration
	// EngineMetricsDialect is auto, vllm, sglang, trtllm or none
	// (--engine-metrics-dialect, SLOTGATE_ENGINE_METRICS_DIALECT, auto).
	EngineMetricsDialect string
	// KVTotalBlocks, BlockSize, MaxNumBatchedTokens and DataParallelSize
	// are static values for what the engine does not export
	// (--kv-total-blocks, --block-size, --max-num-batched-tokens,
	// --data-parallel-size and their SLOTGATE_ variables); 0 is unset.
	KVTotalBlocks, BlockSize, MaxNumBatchedTokens int64
	DataParallelSize                              int
	// DecodeThreshold, PrefillThreshold and PrefillThresholdFrac are the
	// busy thresholds, with Dynamo's flags and variables
	// (--active-decode-blocks-threshold, DYN_ACTIVE_DECODE_BLOCKS_THRESHOLD,
	// and so on); nil is off.
	DecodeThreshold      *float64
	PrefillThreshold     *uint64
	PrefillThresholdFrac *float64
	// RejectWhenBusy makes slotgate refuse new requests while busy
	// (--reject-when-busy, SLOTGATE_REJECT_WHEN_BUSY).
	RejectWhenBusy bool
	// ORCAHeader adds endpoint-load-metrics to proxied responses
	// (--orca-header, SLOTGATE_ORCA_HEADER).
	ORCAHeader bool
	// AdminGRPCListen is the gRPC admin address (--admin-grpc-listen,
	// SLOTGATE_ADMIN_GRPC_LISTEN, ":9091"); "" (given as off) is none.
	AdminGRPCListen string
	// AdmissionConfig is the admission policy file (--admission-config,
	// SLOTGATE_ADMISSION_CONFIG); "" is none. Its content is read by the
	// command, which alone knows the registered classifiers.
	AdmissionConfig string
	// ModelName is echoed by /busy_threshold (--model-name,
	// SLOTGATE_MODEL_NAME, "default").
	ModelName string
	// AccessLog writes one line per proxied request (--access-log,
	// SLOTGATE_ACCESS_LOG, true).
	AccessLog bool
	// EnableProfiling serves /debug/pprof/ on the admin port
	// (--enable-profiling, SLOTGATE_ENABLE_PROFILING, false).
	EnableProfiling bool
	// LogLevel is debug, info, warn or error (--log-level, SLOTGATE_LOG_LEVEL).
	LogLevel string
	// LogFormat is json or console (--log-format, SLOTGATE_LOG_FORMAT).
	LogFormat string

	// ShowVersion is set by --version.
	ShowVersion bool
	// Warnings are problems that did not stop start-up, to be logged once.
	Warnings []string
	// Sources maps each flag name to where its value came from: "flag",
	// the environment variable's name, or "default".
	Sources map[string]string
}

// Load parses args (without the program name) and environ, a map of
// environment variables. It returns flag.ErrHelp for -h or --help, and
// otherwise an error that joins every problem found, one per line.
func Load(args []string, environ map[string]string) (Config, error) {
	var (
		r raw
		c Config
	)
	fs := flag.NewFlagSet("slotgate", flag.ContinueOnError)
	flagenv.AddVersion(fs, &c.ShowVersion)
	sources, err := flagenv.Parse(fs, &r, args, environ)
	if err != nil {
		return Config{}, err
	}
	c.Sources = sources
	v := flagenv.NewChecker(sources)
	c.fill(&r, v)
	c.Warnings = v.Warnings()
	return c, v.Err()
}

func (c *Config) fill(r *raw, v *flagenv.Checker) {
	c.EngineRequestLimit = engineLimit(v, "engine-request-limit", r.EngineRequestLimit)
	if r.EngineRequestLimit != "" {
		c.RequestQueueLimit = intAtLeast(v, "request-queue-limit", r.RequestQueueLimit, 2)
	}
	c.OverloadStatus = overloadStatus(v, "overload-status-code", r.OverloadStatusCode)
	c.QueueTimeout = v.Duration("queue-timeout", r.QueueTimeout, 0)
	c.Listen = v.Address("listen", r.Listen)
	c.AdminListen = v.Address("admin-listen", r.AdminListen)
	if c.Listen != "" && c.Listen == c.AdminListen && !strings.HasSuffix(c.Listen, ":0") {
		v.Fail("admin-listen", r.AdminListen, "must differ from the proxy address "+v.Name("listen"))
	}
	c.EngineURL = v.URL("engine-url", r.EngineURL)
	c.EngineHealthPath = path(v, "engine-health-path", r.EngineHealthPath)
	c.PassthroughPaths = paths(v, "passthrough-paths", r.PassthroughPaths)
	c.MaxRequestBodyBytes = int64(intAtLeast(v, "max-request-body-bytes", r.MaxRequestBody, 1))
	c.RetryAfter = v.Duration("retry-after", r.RetryAfter, 0)
	if c.RetryAfter%time.Second != 0 {
		v.Fail("retry-after", r.RetryAfter, "must be whole seconds")
	}
	c.ShutdownTimeout = v.Duration("shutdown-timeout", r.ShutdownTimeout, time.Nanosecond)
	c.DrainDelay = v.Duration("drain-delay", r.DrainDelay, 0)
	c.fillLoad(r, v)
	c.LogLevel = v.OneOf("log-level", r.LogLevel, "debug", "info", "warn", "error")
	c.LogFormat = v.OneOf("log-format", r.LogFormat, "json", "console")
}
