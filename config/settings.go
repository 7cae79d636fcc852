package config

// raw holds every setting as the text that was given for it, in the shape
// internal/flagenv reads: env and envDefault for the variable and its
// default, flag and usage for the command-line flag. Order here is the
// order of --help.
type raw struct {
	EngineRequestLimit string `flag:"engine-request-limit" env:"DYN_ENGINE_REQUEST_LIMIT" usage:"N, the engine slots: requests the engine may run at once. Unset: no cap, pure pass-through"`
	RequestQueueLimit  string `flag:"request-queue-limit" env:"DYN_DYNAMO_REQUEST_QUEUE_LIMIT" envDefault:"16" usage:"Q, the FIFO overflow queue (at least 2); read only when the engine limit is set"`
	OverloadStatusCode string `flag:"overload-status-code" env:"DYN_HTTP_OVERLOAD_STATUS_CODE" envDefault:"529" usage:"HTTP status of a capacity rejection, 200 through 999; anything else falls back to 529 with a warning"`
	QueueTimeout       string `flag:"queue-timeout" env:"SLOTGATE_QUEUE_TIMEOUT" envDefault:"0s" usage:"longest wait in the queue before the overload answer; 0 waits without limit, as Dynamo does"`
	Listen             string `flag:"listen" env:"SLOTGATE_LISTEN" envDefault:":8080" usage:"proxy address, HTTP/1.1 and cleartext HTTP/2 (h2c)"`
	EngineURL          string `flag:"engine-url" env:"SLOTGATE_ENGINE_URL" envDefault:"http://127.0.0.1:8000" usage:"the engine's base URL"`
	AdminListen        string `flag:"admin-listen" env:"SLOTGATE_ADMIN_LISTEN" envDefault:":9090" usage:"admin address: /metrics, /livez, /readyz, POST /drain; never the proxy port"`
	EngineHealthPath   string `flag:"engine-health-path" env:"SLOTGATE_ENGINE_HEALTH_PATH" envDefault:"/health" usage:"engine path polled every second for /readyz"`
	PassthroughPaths   string `flag:"passthrough-paths" env:"SLOTGATE_PASSTHROUGH_PATHS" envDefault:"/health,/v1/models,/metrics,/version" usage:"comma-separated engine paths proxied without taking a slot"`
	MaxRequestBody     string `flag:"max-request-body-bytes" env:"SLOTGATE_MAX_REQUEST_BODY_BYTES" envDefault:"33554432" usage:"largest request body accepted; larger ones get 413"`
	RetryAfter         string `flag:"retry-after" env:"SLOTGATE_RETRY_AFTER" envDefault:"1s" usage:"Retry-After sent with overload answers, whole seconds; 0 sends none"`
	ShutdownTimeout    string `flag:"shutdown-timeout" env:"SLOTGATE_SHUTDOWN_TIMEOUT" envDefault:"60s" usage:"after the drain delay, how long in-flight and queued requests may take to finish"`
	DrainDelay         string `flag:"drain-delay" env:"SLOTGATE_DRAIN_DELAY" envDefault:"5s" usage:"after SIGTERM or POST /drain, how long new requests are still served while endpoints update"`
	LogLevel           string `flag:"log-level" env:"SLOTGATE_LOG_LEVEL" envDefault:"info" usage:"debug, info, warn or error"`
	LogFormat          string `flag:"log-format" env:"SLOTGATE_LOG_FORMAT" envDefault:"json" usage:"json or console"`
}
