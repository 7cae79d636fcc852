package config

// raw holds every setting as the text that was given for it, in the shape
// internal/flagenv reads: env and envDefault for the variable and its
// default, alias for the other variables read after it (Dynamo's legacy and
// proposed names), flag and usage for the command-line flag. Order here is
// the order of --help.
type raw struct {
	EngineRequestLimit        string `flag:"engine-request-limit" env:"DYN_BACKEND_ADMISSION_ENGINE_REQUEST_LIMIT" alias:"DYN_ENGINE_REQUEST_LIMIT (legacy)" usage:"N: admitted requests the engine may hold until they finish. Unset: no limit; with W unset too, pure pass-through"`
	EngineRequestWaitingLimit string `flag:"engine-request-waiting-limit" env:"DYN_BACKEND_ADMISSION_ENGINE_REQUEST_WAITING_LIMIT" alias:"DYN_BACKEND_ADMISSION_ENGINE_WAIT_LIMIT (as Dynamo 1.7's code reads it)" usage:"W: admitted requests not yet past their first generated token. Unset: no limit"`
	RequestQueueLimit         string `flag:"request-queue-limit" env:"DYN_BACKEND_ADMISSION_REQUEST_QUEUE_LIMIT" alias:"DYN_DYNAMO_REQUEST_QUEUE_LIMIT (legacy: at least 2 and read only when N is set)" envDefault:"16" usage:"Q, the FIFO queue waiting for admission, 16 when N or W is set; 0: no queue. A positive Q needs N or W"`
	PerRankLimits             string `flag:"per-rank-limits" env:"SLOTGATE_PER_RANK_LIMITS" envDefault:"false" bool:"true" usage:"N and W apply to each data-parallel rank, as in Dynamo, instead of to the whole engine"`
	OverloadStatusCode        string `flag:"overload-status-code" env:"DYN_HTTP_OVERLOAD_STATUS_CODE" envDefault:"529" usage:"HTTP status of a capacity rejection, 200 through 999; anything else falls back to 529 with a warning"`
	QueueTimeout              string `flag:"queue-timeout" env:"SLOTGATE_QUEUE_TIMEOUT" alias:"DYN_DYNAMO_REQUEST_QUEUE_TIMEOUT_MS (whole milliseconds)" envDefault:"0s" usage:"longest wait in the queue, from enqueue, before the overload answer; 0 waits without limit, as Dynamo 1.7 does"`
	QueueControlledDelay      string `flag:"queue-controlled-delay" env:"DYN_DYNAMO_REQUEST_QUEUE_ENABLE_CONTROLLED_DELAY" envDefault:"true" bool:"true" usage:"apply the queue timeout; false switches it off"`
	QueueAdaptiveLIFO         string `flag:"queue-adaptive-lifo" env:"DYN_DYNAMO_REQUEST_QUEUE_ENABLE_ADAPTIVE_LIFO" envDefault:"false" bool:"true" usage:"after a queue-timeout rejection, take exactly one admission from the newest waiter instead of the oldest; needs a queue timeout"`
	Listen                    string `flag:"listen" env:"SLOTGATE_LISTEN" envDefault:":8080" usage:"proxy address, HTTP/1.1 and cleartext HTTP/2 (h2c)"`
	EngineURL                 string `flag:"engine-url" env:"SLOTGATE_ENGINE_URL" envDefault:"http://127.0.0.1:8000" usage:"the engine's base URL"`
	EngineGRPCURL             string `flag:"engine-grpc-url" env:"SLOTGATE_ENGINE_GRPC_URL" usage:"the engine's gRPC server, http://host:port (cleartext HTTP/2); unset: gRPC calls are answered UNIMPLEMENTED"`
	GRPCListen                string `flag:"grpc-listen" env:"SLOTGATE_GRPC_LISTEN" usage:"a port of its own for gRPC calls, beside the proxy port, which takes them too; unset or off: none"`
	GRPCMaxMessageBytes       string `flag:"grpc-max-message-bytes" env:"SLOTGATE_GRPC_MAX_MESSAGE_BYTES" envDefault:"67108864" usage:"largest gRPC message either way; a larger one ends its call with RESOURCE_EXHAUSTED"`
	AdminListen               string `flag:"admin-listen" env:"SLOTGATE_ADMIN_LISTEN" envDefault:":9090" usage:"admin address: /metrics, /livez, /readyz, POST /drain; never the proxy port"`
	EngineHealthPath          string `flag:"engine-health-path" env:"SLOTGATE_ENGINE_HEALTH_PATH" envDefault:"/health" usage:"engine path polled for /readyz: every second while ready, every 200ms while not"`
	PassthroughPaths          string `flag:"passthrough-paths" env:"SLOTGATE_PASSTHROUGH_PATHS" envDefault:"/health,/v1/models,/metrics,/version" usage:"comma-separated engine paths proxied without taking a slot"`
	MaxRequestBody            string `flag:"max-request-body-bytes" env:"SLOTGATE_MAX_REQUEST_BODY_BYTES" envDefault:"33554432" usage:"largest request body accepted; larger ones get 413"`
	MaxBufferedBody           string `flag:"max-buffered-body-bytes" env:"SLOTGATE_MAX_BUFFERED_BODY_BYTES" envDefault:"268435456" usage:"memory for the bodies of queued requests, all together; a queued request whose body does not fit waits without its body read, never refused for it; 0: no queued body is read"`
	RequestHeaderTimeout      string `flag:"request-header-timeout" env:"SLOTGATE_REQUEST_HEADER_TIMEOUT" envDefault:"30s" usage:"longest time a request's headers may take to arrive on the proxy port; a slower client's connection is closed; 0: no limit"`
	RequestBodyTimeout        string `flag:"request-body-timeout" env:"SLOTGATE_REQUEST_BODY_TIMEOUT" envDefault:"60s" usage:"longest time a request's body may take to arrive, from its headers; a slower one gets 408 and its slot back; 0: no limit"`
	RetryAfter                string `flag:"retry-after" env:"SLOTGATE_RETRY_AFTER" envDefault:"1s" usage:"Retry-After sent with overload answers, whole seconds; 0 sends none; auto: computed per refusal from the rate slots are released and the requests waiting, 1s to 60s (1s on draining answers)"`
	ShutdownTimeout           string `flag:"shutdown-timeout" env:"SLOTGATE_SHUTDOWN_TIMEOUT" envDefault:"60s" usage:"after the drain delay, how long in-flight and queued requests may take to finish"`
	DrainDelay                string `flag:"drain-delay" env:"SLOTGATE_DRAIN_DELAY" envDefault:"5s" usage:"after SIGTERM or POST /drain, how long new requests are still served while endpoints update"`
	AbortGrace                string `flag:"abort-grace" env:"SLOTGATE_ABORT_GRACE" envDefault:"5ms" usage:"how long the slot of a request whose client left while the engine served it stays taken, for the engine to see the abort; 0 through 1s, 0 hands it on at once"`
	EngineMetricsInterval     string `flag:"engine-metrics-interval" env:"SLOTGATE_ENGINE_METRICS_INTERVAL" envDefault:"200ms" usage:"how often the engine's load metrics are scraped"`
	EngineMetricsDialect      string `flag:"engine-metrics-dialect" env:"SLOTGATE_ENGINE_METRICS_DIALECT" envDefault:"auto" usage:"how the engine reports its load: auto, vllm, sglang, trtllm or none"`
	ServeEngineMetrics        string `flag:"serve-engine-metrics" env:"SLOTGATE_SERVE_ENGINE_METRICS" envDefault:"auto" bool:"true" usage:"answer GET /metrics on the proxy port from slotgate's own engine scrape, slotgate's queue added to the engine's waiting gauge, for endpoint pickers (llm-d, Gateway API inference extension); auto: on unless --engine-metrics-dialect is none; false: /metrics is a passthrough path"`
	KVTotalBlocks             string `flag:"kv-total-blocks" env:"SLOTGATE_KV_TOTAL_BLOCKS" envDefault:"0" usage:"each DP rank's KV cache capacity in blocks, when the engine does not export it; 0: unset"`
	BlockSize                 string `flag:"block-size" env:"SLOTGATE_BLOCK_SIZE" envDefault:"0" usage:"tokens per KV block, when the engine does not export it; 0: unset"`
	MaxNumBatchedTokens       string `flag:"max-num-batched-tokens" env:"SLOTGATE_MAX_NUM_BATCHED_TOKENS" envDefault:"0" usage:"each DP rank's token budget per step, when the engine does not export it (vLLM does not); 0: unset"`
	DataParallelSize          string `flag:"data-parallel-size" env:"SLOTGATE_DATA_PARALLEL_SIZE" envDefault:"0" usage:"the DP ranks behind the engine URL; vLLM's KV capacity is divided by it; 0: the ranks the engine reports"`
	DecodeThreshold           string `flag:"active-decode-blocks-threshold" env:"DYN_ACTIVE_DECODE_BLOCKS_THRESHOLD" usage:"busy when KV blocks in use exceed this fraction (0..1) of the total on every rank; unset or None: off"`
	PrefillThreshold          string `flag:"active-prefill-tokens-threshold" env:"DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD" usage:"busy when prefill tokens exceed this count on every rank; unset or None: off"`
	PrefillThresholdFrac      string `flag:"active-prefill-tokens-threshold-frac" env:"DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD_FRAC" usage:"busy when prefill tokens exceed this multiple of max-num-batched-tokens on every rank; unset or None: off"`
	RejectWhenBusy            string `flag:"reject-when-busy" env:"SLOTGATE_REJECT_WHEN_BUSY" envDefault:"false" bool:"true" usage:"refuse new requests with the overload status while the worker is busy, for frontends that cannot exclude busy workers"`
	ORCAHeader                string `flag:"orca-header" env:"SLOTGATE_ORCA_HEADER" envDefault:"false" bool:"true" usage:"add the ORCA load report (endpoint-load-metrics) to every proxied answer, and its endpoint-load-metrics-bin trailer to every forwarded gRPC call; without it, only requests that ask with endpoint-load-metrics-format get one"`
	ORCAFormat                string `flag:"orca-format" env:"SLOTGATE_ORCA_FORMAT" envDefault:"text" usage:"the form of the ORCA header when the request does not ask for one with endpoint-load-metrics-format: text, json or bin"`
	DynamoEventPlane          string `flag:"dynamo-event-plane" env:"SLOTGATE_DYNAMO_EVENT_PLANE" usage:"publish the load to Dynamo's frontends as ActiveLoad events on this NATS server, nats://[user:pass@]host:port; off or unset: none, unless DYN_EVENT_PLANE=nats"`
	DynEventPlane             string `flag:"dyn-event-plane" env:"DYN_EVENT_PLANE" usage:"Dynamo's event transport, nats or zmq: with nats and no --dynamo-event-plane, the load goes to NATS_SERVER; slotgate does not publish over zmq"`
	NATSServer                string `flag:"nats-server" env:"NATS_SERVER" usage:"Dynamo's NATS server, used when DYN_EVENT_PLANE=nats and --dynamo-event-plane is unset; unset: nats://localhost:4222"`
	DynamoEndpoint            string `flag:"dynamo-endpoint" env:"SLOTGATE_DYNAMO_ENDPOINT" envDefault:"dyn://dynamo.backend.generate" usage:"the Dynamo endpoint whose load this is, as the worker's --endpoint: dyn://namespace.component.endpoint"`
	DynamoWorkerID            string `flag:"dynamo-worker-id" env:"SLOTGATE_DYNAMO_WORKER_ID" usage:"the worker's Dynamo instance id, decimal or 0x-hex; unset: the id Dynamo's Kubernetes discovery derives from POD_NAME"`
	PodName                   string `flag:"pod-name" env:"POD_NAME" usage:"the pod's name, whose hash is the worker id when --dynamo-worker-id is unset"`
	DynamoEventHeartbeat      string `flag:"dynamo-event-heartbeat" env:"SLOTGATE_DYNAMO_EVENT_HEARTBEAT" envDefault:"10s" usage:"how often every rank's load is republished on the event plane when nothing changed; at least 1s"`
	AdminGRPCListen           string `flag:"admin-grpc-listen" env:"SLOTGATE_ADMIN_GRPC_LISTEN" envDefault:":9091" usage:"gRPC admin address: the LoadReporter service and gRPC health; off (or an empty flag): none; never the proxy port"`
	AdmissionConfig           string `flag:"admission-config" env:"SLOTGATE_ADMISSION_CONFIG" usage:"YAML file of the admission policy: request classifier and policy-class queues; unset: every request admitted in one FIFO queue"`
	ModelName                 string `flag:"model-name" env:"SLOTGATE_MODEL_NAME" envDefault:"default" usage:"the model named in /busy_threshold answers"`
	AccessLog                 string `flag:"access-log" env:"SLOTGATE_ACCESS_LOG" envDefault:"true" bool:"true" usage:"write one JSON line per proxied request to standard error; false for none"`
	AdminTokenFile            string `flag:"admin-token-file" env:"SLOTGATE_ADMIN_TOKEN_FILE" usage:"file holding the bearer token that POST /drain, /limits and /busy_threshold require, re-read when it changes; unset: no token, so bind the admin port to a pod-local address"`
	EnableProfiling           string `flag:"enable-profiling" env:"SLOTGATE_ENABLE_PROFILING" envDefault:"false" bool:"true" usage:"serve Go's pprof profiles under /debug/pprof/ on the admin port"`
	LogLevel                  string `flag:"log-level" env:"SLOTGATE_LOG_LEVEL" envDefault:"info" usage:"debug, info, warn or error"`
	LogFormat                 string `flag:"log-format" env:"SLOTGATE_LOG_FORMAT" envDefault:"json" usage:"json or console"`
}
