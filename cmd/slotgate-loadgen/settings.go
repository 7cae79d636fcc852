package main

// raw holds every setting as the text that was given for it, in the shape
// internal/flagenv reads: env and envDefault for the variable and its
// default, flag and usage for the command-line flag, and bool for a flag
// that may be given without a value. Order here is the order of --help.
type raw struct {
	Mode             string `flag:"mode" env:"LOADGEN_MODE" envDefault:"closed" usage:"closed: --concurrency workers send back to back; open: Poisson arrivals at --rate"`
	Concurrency      string `flag:"concurrency" env:"LOADGEN_CONCURRENCY" envDefault:"8" usage:"closed loop: requests in flight, each worker sending its next as soon as one ends"`
	Rate             string `flag:"rate" env:"LOADGEN_RATE" usage:"open loop: mean arrivals per second (required with --mode open)"`
	MaxOutstanding   string `flag:"max-outstanding" env:"LOADGEN_MAX_OUTSTANDING" envDefault:"10000" usage:"open loop: most requests in flight; later arrivals are dropped and counted"`
	Seed             string `flag:"seed" env:"LOADGEN_SEED" envDefault:"1" usage:"seed of the PRNG for arrival gaps, lengths and prompt text"`
	Requests         string `flag:"requests" env:"LOADGEN_REQUESTS" usage:"stop issuing after this many requests (open loop: arrivals); set this, --duration or both"`
	Duration         string `flag:"duration" env:"LOADGEN_DURATION" usage:"stop issuing after this long, e.g. 30s or 5m; set this, --requests or both"`
	DrainTimeout     string `flag:"drain-timeout" env:"LOADGEN_DRAIN_TIMEOUT" envDefault:"30s" usage:"after issuing stops, how long requests in flight may take before they are cancelled"`
	URL              string `flag:"url" env:"LOADGEN_URL" envDefault:"http://127.0.0.1:8080" usage:"base URL of slotgate or of an OpenAI-compatible engine; with --grpc, the gRPC server's http://host:port"`
	GRPC             string `flag:"grpc" env:"LOADGEN_GRPC" envDefault:"false" bool:"true" usage:"send vLLM's gRPC Generate calls (cleartext HTTP/2) to --url instead of HTTP completions; --endpoint, --model and --api-key are then refused"`
	Endpoint         string `flag:"endpoint" env:"LOADGEN_ENDPOINT" envDefault:"/v1/completions" usage:"/v1/completions or /v1/chat/completions"`
	Model            string `flag:"model" env:"LOADGEN_MODEL" envDefault:"sim-model" usage:"model named in each request"`
	Stream           string `flag:"stream" env:"LOADGEN_STREAM" envDefault:"true" bool:"true" usage:"stream the answers (SSE with a usage chunk; over gRPC, a chunk per step); --stream=false waits for whole answers"`
	PromptTokens     string `flag:"prompt-tokens" env:"LOADGEN_PROMPT_TOKENS" envDefault:"128" usage:"prompt length in tokens, about 4 characters each: N, uniform:MIN:MAX or normal:MEAN:STDDEV"`
	MaxTokens        string `flag:"max-tokens" env:"LOADGEN_MAX_TOKENS" envDefault:"64" usage:"max_tokens of each request, with ignore_eos: N, uniform:MIN:MAX or normal:MEAN:STDDEV"`
	Timeout          string `flag:"timeout" env:"LOADGEN_TIMEOUT" envDefault:"5m" usage:"limit on each try of a request; 0 for none"`
	Retry            string `flag:"retry" env:"LOADGEN_RETRY" envDefault:"1" usage:"most tries per request, the first included; a 429, 503 or 529 (gRPC RESOURCE_EXHAUSTED, UNAVAILABLE) or a connection failed before the answer is tried again after its Retry-After or a jittered backoff (0.5s doubling, at most 8s); 1 never retries"`
	Deadline         string `flag:"deadline" env:"LOADGEN_DEADLINE" usage:"the client's deadline for a whole request, all its tries and waits, from its first send, e.g. 10s; a request not done by then is cancelled and counted as deadline; unset or 0 for none"`
	APIKey           string `flag:"api-key" env:"LOADGEN_API_KEY" usage:"sent as Authorization: Bearer KEY when set"`
	JSON             string `flag:"json" env:"LOADGEN_JSON" usage:"write the results as JSON to this file; - for stdout, which then gets no table"`
	ProgressInterval string `flag:"progress-interval" env:"LOADGEN_PROGRESS_INTERVAL" envDefault:"2s" usage:"progress on stderr: a line this often, or on a terminal one line rewritten every 250ms; 0 for none"`
}
