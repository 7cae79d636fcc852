package main

// raw holds every setting as the text that was given for it, in the shape
// internal/flagenv reads: env and envDefault for the variable and its
// default, flag and usage for the command-line flag. Order here is the
// order of --help.
type raw struct {
	Listen                  string `flag:"listen" env:"ENGINESIM_LISTEN" envDefault:"127.0.0.1:8000" usage:"address of the OpenAI-compatible API; port 0 picks a free port, logged in the \"listening\" line"`
	GRPCListen              string `flag:"grpc-listen" env:"ENGINESIM_GRPC_LISTEN" usage:"address of the gRPC API on the same engine: vLLM's vllm.grpc.engine.VllmEngine (Generate, HealthCheck, Abort) and grpc.health.v1; port 0 picks a free port, logged as grpc_addr in the \"listening\" line; unset or off: none"`
	Model                   string `flag:"model" env:"ENGINESIM_MODEL" envDefault:"sim-model" usage:"served model name; requests naming another model get 404"`
	MaxNumSeqs              string `flag:"max-num-seqs" env:"ENGINESIM_MAX_NUM_SEQS" envDefault:"256" usage:"most requests running at once on each data-parallel rank"`
	MaxNumQueuedReqs        string `flag:"max-num-queued-reqs" env:"ENGINESIM_MAX_NUM_QUEUED_REQS" envDefault:"0" usage:"most requests running + waiting on each rank, beyond which requests get 503 (vllm-project/vllm#49445); 0: unbounded"`
	NumGPUBlocks            string `flag:"num-gpu-blocks" env:"ENGINESIM_NUM_GPU_BLOCKS" envDefault:"16384" usage:"KV cache blocks of each rank, vLLM's null block included"`
	BlockSize               string `flag:"block-size" env:"ENGINESIM_BLOCK_SIZE" envDefault:"16" usage:"tokens per KV cache block"`
	MaxNumBatchedTokens     string `flag:"max-num-batched-tokens" env:"ENGINESIM_MAX_NUM_BATCHED_TOKENS" envDefault:"8192" usage:"most tokens computed in one step of a rank (the chunked-prefill budget); at least --max-num-seqs"`
	DataParallelSize        string `flag:"data-parallel-size" env:"ENGINESIM_DATA_PARALLEL_SIZE" envDefault:"1" usage:"data-parallel ranks, each with its own scheduler and KV cache; requests go to the least loaded"`
	MaxModelLen             string `flag:"max-model-len" env:"ENGINESIM_MAX_MODEL_LEN" envDefault:"8192" usage:"longest prompt + max_tokens; at most (num-gpu-blocks - 1) * block-size"`
	SpeedupRatio            string `flag:"speedup-ratio" env:"ENGINESIM_SPEEDUP_RATIO" envDefault:"1.0" usage:"divides every modelled step time (Dynamo mocker's polynomial model); must be positive"`
	MetricsDialect          string `flag:"metrics-dialect" env:"ENGINESIM_METRICS_DIALECT" envDefault:"vllm" usage:"whose load endpoints to imitate: vllm (Prometheus /metrics), sglang (/metrics and /v1/loads) or trtllm (JSON /metrics, drained on read)"`
	Seed                    string `flag:"seed" env:"ENGINESIM_SEED" envDefault:"0" usage:"seed of the generated text, mixed with each request's prompt and seed, and of the fault draws"`
	FaultResetRate          string `flag:"fault-reset-rate" env:"ENGINESIM_FAULT_RESET_RATE" envDefault:"0" usage:"probability, 0 through 1, that a generation request's connection is reset: mid-stream, or instead of a non-streamed answer (gRPC: UNAVAILABLE)"`
	FaultErrorRate          string `flag:"fault-error-rate" env:"ENGINESIM_FAULT_ERROR_RATE" envDefault:"0" usage:"probability, 0 through 1, that a generation request gets 500 at once, in OpenAI's error shape (gRPC: INTERNAL)"`
	FaultStallRate          string `flag:"fault-stall-rate" env:"ENGINESIM_FAULT_STALL_RATE" envDefault:"0" usage:"probability, 0 through 1, that an answer pauses once for --fault-stall: mid-stream, or before a non-streamed answer"`
	FaultStall              string `flag:"fault-stall" env:"ENGINESIM_FAULT_STALL" envDefault:"2s" usage:"length of a stall, a Go duration"`
	FaultSlowFirstTokenRate string `flag:"fault-slow-first-token-rate" env:"ENGINESIM_FAULT_SLOW_FIRST_TOKEN_RATE" envDefault:"0" usage:"probability, 0 through 1, that the first token (or a non-streamed answer) is delayed by --fault-slow-first-token"`
	FaultSlowFirstToken     string `flag:"fault-slow-first-token" env:"ENGINESIM_FAULT_SLOW_FIRST_TOKEN" envDefault:"2s" usage:"delay of a slow first token, a Go duration"`
	FaultNeverEndRate       string `flag:"fault-never-end-rate" env:"ENGINESIM_FAULT_NEVER_END_RATE" envDefault:"0" usage:"probability, 0 through 1, that an answer never ends until the client leaves: a stream sends its tokens, then keep-alive comments and never [DONE]; a non-streamed answer never comes."`
	LogLevel                string `flag:"log-level" env:"ENGINESIM_LOG_LEVEL" envDefault:"info" usage:"debug, info, warn or error"`
	LogFormat               string `flag:"log-format" env:"ENGINESIM_LOG_FORMAT" envDefault:"json" usage:"json or console"`
}
