package config

import (
	"flag"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/slotgate/slotgate/internal/flagenv"
)

// DefaultOverloadStatus is the status of a capacity rejection when
// DYN_HTTP_OVERLOAD_STATUS_CODE is unset or unusable, as in Dynamo.
const DefaultOverloadStatus = 529

// maxAbortGrace bounds --abort-grace: a slot held longer than this after
// its client left is capacity lost, not a grace.
const maxAbortGrace = time.Second

// Config is slotgate's validated configuration. Each field names its flag
// and environment variable; the defaults are in settings.go.
type Config struct {
	// EngineRequestLimit is N, the most admitted requests that have not
	// finished (--engine-request-limit,
	// DYN_BACKEND_ADMISSION_ENGINE_REQUEST_LIMIT, or the legacy
	// DYN_ENGINE_REQUEST_LIMIT). Zero means unset: no limit.
	EngineRequestLimit int
	// EngineRequestWaitingLimit is W, the most admitted requests not yet
	// past their first generated token (--engine-request-waiting-limit,
	// DYN_BACKEND_ADMISSION_ENGINE_REQUEST_WAITING_LIMIT, or
	// DYN_BACKEND_ADMISSION_ENGINE_WAIT_LIMIT, the name Dynamo 1.7's code
	// reads). Zero means unset: no limit. N or W turns the gate on (GateOn);
	// a request is admitted only with room under both.
	EngineRequestWaitingLimit int
	// RequestQueueLimit is Q, the requests waiting for admission
	// (--request-queue-limit, DYN_BACKEND_ADMISSION_REQUEST_QUEUE_LIMIT, or
	// the legacy DYN_DYNAMO_REQUEST_QUEUE_LIMIT); 16 when the gate is on and
	// Q is not given, and zero, no queue, when the gate is off. Under the
	// flag or the canonical variable it may be 0; under the legacy name it
	// is at least 2 and read only when N is set.
	RequestQueueLimit int
	// EnginePrefillTokenLimit is P, the most prompt tokens the admitted
	// requests before their first token may add up to
	// (--engine-prefill-token-limit, SLOTGATE_ENGINE_PREFILL_TOKEN_LIMIT);
	// RequestQueueTokenLimit bounds the prompt tokens of the queue
	// (--request-queue-token-limit, SLOTGATE_REQUEST_QUEUE_TOKEN_LIMIT).
	// Zero means no such limit; either needs N or W.
	EnginePrefillTokenLimit int64
	RequestQueueTokenLimit  int64
	// PerRankLimits makes N and W apply to each data-parallel rank rather
	// than to the whole engine (--per-rank-limits, SLOTGATE_PER_RANK_LIMITS,
	// false).
	PerRankLimits bool
	// OverloadStatus is the status of capacity rejections
	// (--overload-status-code, DYN_HTTP_OVERLOAD_STATUS_CODE, default 529).
	OverloadStatus int
	// QueueTimeout is each queued request's deadline, counted from enqueue
	// (--queue-timeout or SLOTGATE_QUEUE_TIMEOUT as a duration,
	// DYN_DYNAMO_REQUEST_QUEUE_TIMEOUT_MS in milliseconds); zero means none.
	// It is zero too when --queue-controlled-delay
	// (DYN_DYNAMO_REQUEST_QUEUE_ENABLE_CONTROLLED_DELAY, true) is false.
	QueueTimeout time.Duration
	// QueueAdaptiveLIFO makes the admission after a queue-timeout
	// rejection go to the newest waiter instead of the oldest, once
	// (rejections before that admission make it once, not once each)
	// (--queue-adaptive-lifo,
	// DYN_DYNAMO_REQUEST_QUEUE_ENABLE_ADAPTIVE_LIFO, false). Without a
	// queue timeout it does nothing.
	QueueAdaptiveLIFO bool
	// Listen is the proxy address (--listen, SLOTGATE_LISTEN, ":8080").
	Listen string
	// EngineURL is the engine's base URL (--engine-url, SLOTGATE_ENGINE_URL).
	EngineURL *url.URL
	// EngineGRPCURL is the engine's gRPC server (--engine-grpc-url,
	// SLOTGATE_ENGINE_GRPC_URL); nil when unset.
	EngineGRPCURL *url.URL
	// GRPCListen is a port of its own for gRPC calls (--grpc-listen,
	// SLOTGATE_GRPC_LISTEN); "" (unset or off) is none.
	GRPCListen string
	// GRPCMaxMessageBytes bounds each gRPC message
	// (--grpc-max-message-bytes, SLOTGATE_GRPC_MAX_MESSAGE_BYTES, 64 MiB).
	GRPCMaxMessageBytes int
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
	// MaxBufferedBodyBytes bounds the memory held by the bodies of queued
	// requests, all together (--max-buffered-body-bytes,
	// SLOTGATE_MAX_BUFFERED_BODY_BYTES, 256 MiB). A queued request whose
	// body would not fit waits with its body unread; 0 reads none.
	MaxBufferedBodyBytes int64
	// RequestHeaderTimeout bounds how long a request's headers may take to
	// arrive on the proxy port (--request-header-timeout,
	// SLOTGATE_REQUEST_HEADER_TIMEOUT, 30s); zero is no limit.
	RequestHeaderTimeout time.Duration
	// FrontEnd has the proxy port's listener answer the common HTTP/1.1
	// request before net/http reads it (--front-end, SLOTGATE_FRONT_END,
	// true).
	FrontEnd bool
	// StreamRelay is how streamed HTTP/1.1 answers are carried: "off"
	// (net/http, a goroutine each) or "epoll" (the relay's event loops,
	// Linux only); "auto", the default, is read as epoll on Linux and off
	// elsewhere (--stream-relay, SLOTGATE_STREAM_RELAY).
	StreamRelay string
	// MaxProcs is the processors the Go runtime runs on (GOMAXPROCS), or 0
	// for Go's own choice: the container's CPU limit, else every CPU
	// (--max-procs, SLOTGATE_MAX_PROCS, auto).
	MaxProcs int
	// RelayLoops is the stream relay's event loops, or 0 for the relay's
	// own choice (--relay-loops, SLOTGATE_RELAY_LOOPS, auto).
	RelayLoops int
	// RequestBodyTimeout bounds how long a request's body may take to
	// arrive, from its headers (--request-body-timeout,
	// SLOTGATE_REQUEST_BODY_TIMEOUT, 60s); zero is no limit.
	RequestBodyTimeout time.Duration
	// RetryAfter is sent with overload answers (--retry-after,
	// SLOTGATE_RETRY_AFTER, 1s); zero sends none. With RetryAfterAuto
	// (--retry-after auto) overload answers carry a hint computed from
	// the engine's pace instead, and RetryAfter (1s) is the hint of the
	// other answers that carry one (draining, rate limited).
	RetryAfter     time.Duration
	RetryAfterAuto bool
	// ShutdownTimeout bounds the final drain (--shutdown-timeout,
	// SLOTGATE_SHUTDOWN_TIMEOUT, 60s).
	ShutdownTimeout time.Duration
	// DrainDelay is how long new requests are still served after a drain
	// starts (--drain-delay, SLOTGATE_DRAIN_DELAY, 5s).
	DrainDelay time.Duration
	// AbortGrace is how long the slot of a request whose client left while
	// the engine served it stays taken before it is handed on, from 0
	// (at once) through 1s (--abort-grace, SLOTGATE_ABORT_GRACE, 5ms).
	AbortGrace time.Duration
	// FirstTokenTimeout is the first-token budget of a streamed request,
	// from its forwarding to the engine (--first-token-timeout,
	// SLOTGATE_FIRST_TOKEN_TIMEOUT, 0: off); FirstTokenTimeoutPer1K adds
	// to it per 1000 prompt tokens (--first-token-timeout-per-1k-tokens,
	// SLOTGATE_FIRST_TOKEN_TIMEOUT_PER_1K_TOKENS, 0).
	FirstTokenTimeout, FirstTokenTimeoutPer1K time.Duration
	// EngineMetricsInterval is the engine scrape period
	// (--engine-metrics-interval, SLOTGATE_ENGINE_METRICS_INTERVAL, 200ms).
	EngineMetricsInterval time.Duration
	// EngineMetricsDialect is auto, vllm, sglang, trtllm or none
	// (--engine-metrics-dialect, SLOTGATE_ENGINE_METRICS_DIALECT, auto).
	EngineMetricsDialect string
	// ServeEngineMetrics answers GET /metrics on the proxy port from the
	// scraper's latest engine scrape, slotgate's queue added to the
	// engine's waiting gauge (--serve-engine-metrics,
	// SLOTGATE_SERVE_ENGINE_METRICS, auto: on unless the dialect is none).
	ServeEngineMetrics bool
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
	// ORCAHeader adds endpoint-load-metrics to every proxied response,
	// and endpoint-load-metrics-bin to every forwarded gRPC call's
	// trailers (--orca-header, SLOTGATE_ORCA_HEADER).
	ORCAHeader bool
	// ORCAFormat is the header's form when the request does not ask for
	// one: text, json or bin (--orca-format, SLOTGATE_ORCA_FORMAT).
	ORCAFormat string
	// DynamoEventPlane is the NATS server the load is published to as
	// Dynamo ActiveLoad events (--dynamo-event-plane,
	// SLOTGATE_DYNAMO_EVENT_PLANE; else NATS_SERVER, or
	// nats://localhost:4222, when DYN_EVENT_PLANE=nats); "" is off.
	DynamoEventPlane string
	// DynamoNamespace, DynamoComponent and DynamoEndpointName name the
	// Dynamo endpoint (--dynamo-endpoint, SLOTGATE_DYNAMO_ENDPOINT,
	// dyn://dynamo.backend.generate).
	DynamoNamespace, DynamoComponent, DynamoEndpointName string
	// DynamoWorkerID is the worker's Dynamo instance id
	// (--dynamo-worker-id, SLOTGATE_DYNAMO_WORKER_ID); nil when unset,
	// and then DynamoPodName (--pod-name, POD_NAME) gives it.
	DynamoWorkerID *uint64
	DynamoPodName  string
	// DynamoEventHeartbeat is how often every rank is republished
	// (--dynamo-event-heartbeat, SLOTGATE_DYNAMO_EVENT_HEARTBEAT, 10s).
	DynamoEventHeartbeat time.Duration
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
	// AdminTokenFile holds the bearer token that mutating admin endpoints
	// require (--admin-token-file, SLOTGATE_ADMIN_TOKEN_FILE); "" is none.
	AdminTokenFile string
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
	// the name of the environment variable that gave it (a legacy name
	// when that was the one set), or "default".
	Sources map[string]string
}

// GateOn reports whether an engine limit, N or W, is set. Without one
// slotgate admits everything at once: a pure pass-through, with no queue.
func (c Config) GateOn() bool {
	return c.EngineRequestLimit > 0 || c.EngineRequestWaitingLimit > 0
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
	warnShadowed(v, flagenv.Shadowed(flagenv.MustSettings(&r), sources, environ))
	c.Warnings = v.Warnings()
	return c, v.Err()
}

func (c *Config) fill(r *raw, v *flagenv.Checker) {
	c.fillAdmission(r, v)
	c.OverloadStatus = overloadStatus(v, "overload-status-code", r.OverloadStatusCode)
	c.Listen = v.Address("listen", r.Listen)
	c.AdminListen = v.Address("admin-listen", r.AdminListen)
	if c.Listen != "" && c.Listen == c.AdminListen && !strings.HasSuffix(c.Listen, ":0") {
		v.Fail("admin-listen", r.AdminListen, "must differ from the proxy address "+v.Name("listen"))
	}
	c.EngineURL = v.URL("engine-url", r.EngineURL)
	c.fillGRPC(r, v)
	c.EngineHealthPath = path(v, "engine-health-path", r.EngineHealthPath)
	c.PassthroughPaths = paths(v, "passthrough-paths", r.PassthroughPaths)
	c.MaxRequestBodyBytes = int64(intAtLeast(v, "max-request-body-bytes", r.MaxRequestBody, 1))
	c.MaxBufferedBodyBytes = int64(intAtLeast(v, "max-buffered-body-bytes", r.MaxBufferedBody, 0))
	c.RequestHeaderTimeout = v.Duration("request-header-timeout", r.RequestHeaderTimeout, 0)
	c.RequestBodyTimeout = v.Duration("request-body-timeout", r.RequestBodyTimeout, 0)
	c.StreamRelay = v.OneOf("stream-relay", r.StreamRelay, "auto", "epoll", "off")
	switch {
	case c.StreamRelay == "epoll" && runtime.GOOS != "linux":
		v.Fail("stream-relay", r.StreamRelay, "epoll runs on Linux only")
	case c.StreamRelay == "auto" && runtime.GOOS == "linux":
		c.StreamRelay = "epoll"
	case c.StreamRelay == "auto":
		c.StreamRelay = "off"
	}
	c.MaxProcs = maxProcs(v, r.MaxProcs)
	c.RelayLoops = relayLoops(v, r.RelayLoops)
	if c.RelayLoops > 0 && c.StreamRelay == "off" {
		v.Warn(fmt.Sprintf("%s=%d does nothing: the stream relay is off (%s)", v.Name("relay-loops"), c.RelayLoops, v.Name("stream-relay")))
	}
	c.RetryAfter, c.RetryAfterAuto = retryAfter(v, r.RetryAfter)
	c.ShutdownTimeout = v.Duration("shutdown-timeout", r.ShutdownTimeout, time.Nanosecond)
	c.DrainDelay = v.Duration("drain-delay", r.DrainDelay, 0)
	c.AbortGrace = v.Duration("abort-grace", r.AbortGrace, 0)
	if c.AbortGrace > maxAbortGrace {
		v.Fail("abort-grace", r.AbortGrace, "must be at most "+maxAbortGrace.String())
	}
	c.fillFirstToken(r, v)
	c.AdminTokenFile = r.AdminTokenFile
	c.fillLoad(r, v)
	c.LogLevel = v.OneOf("log-level", r.LogLevel, "debug", "info", "warn", "error")
	c.LogFormat = v.OneOf("log-format", r.LogFormat, "json", "console")
	c.fillEventPlane(r, v)
}

// maxProcs reads --max-procs: auto (any case) or 0 is Go's own choice
// (0); otherwise a positive integer, at most maxMaxProcs.
func maxProcs(v *flagenv.Checker, s string) int {
	return autoInt(v, "max-procs", s, maxMaxProcs)
}

// relayLoops reads --relay-loops: auto (any case) or 0 is the relay's
// own choice (0); otherwise a positive integer, at most maxRelayLoops.
func relayLoops(v *flagenv.Checker, s string) int {
	return autoInt(v, "relay-loops", s, maxRelayLoops)
}

// autoInt reads a setting that is auto (any case, read as 0) or an
// integer from 0 to hi.
func autoInt(v *flagenv.Checker, flagName, s string, hi int) int {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		return 0
	}
	return v.Int(flagName, s, 0, hi, fmt.Sprintf("must be auto, or an integer from 0 (auto) to %d", hi))
}

// maxRelayLoops bounds --relay-loops: each loop is a processor more.
const maxRelayLoops = 64

// maxMaxProcs bounds --max-procs: more processors than a machine has are
// only scheduler overhead.
const maxMaxProcs = 1024

// retryAfter reads --retry-after: whole seconds, or auto (any case) for
// hints computed from the engine's pace, with 1s for the answers that are
// not overload refusals.
func retryAfter(v *flagenv.Checker, s string) (d time.Duration, auto bool) {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		return time.Second, true
	}
	d = v.Duration("retry-after", s, 0)
	if d%time.Second != 0 {
		v.Fail("retry-after", s, "must be whole seconds, or auto")
	}
	return d, false
}
