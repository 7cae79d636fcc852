package config_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/config"
)

// setting is what the tests expect of one flag: its environment variable
// and the default shown by Usage.
type setting struct {
	flag, env, usageDefault string
}

// allSettings is every setting slotgate has, in --help order. The tests
// check it against Config.Sources and Usage, so a setting added to the
// package without a test here fails TestSettingsTableIsComplete.
var allSettings = []setting{
	{"engine-request-limit", "DYN_BACKEND_ADMISSION_ENGINE_REQUEST_LIMIT", "(unset)"},
	{"engine-request-waiting-limit", "DYN_BACKEND_ADMISSION_ENGINE_REQUEST_WAITING_LIMIT", "(unset)"},
	{"request-queue-limit", "DYN_BACKEND_ADMISSION_REQUEST_QUEUE_LIMIT", "16"},
	{"engine-prefill-token-limit", "SLOTGATE_ENGINE_PREFILL_TOKEN_LIMIT", "0"},
	{"request-queue-token-limit", "SLOTGATE_REQUEST_QUEUE_TOKEN_LIMIT", "0"},
	{"per-rank-limits", "SLOTGATE_PER_RANK_LIMITS", "false"},
	{"overload-status-code", "DYN_HTTP_OVERLOAD_STATUS_CODE", "529"},
	{"queue-timeout", "SLOTGATE_QUEUE_TIMEOUT", "0s"},
	{"queue-controlled-delay", "DYN_DYNAMO_REQUEST_QUEUE_ENABLE_CONTROLLED_DELAY", "true"},
	{"queue-adaptive-lifo", "DYN_DYNAMO_REQUEST_QUEUE_ENABLE_ADAPTIVE_LIFO", "false"},
	{"listen", "SLOTGATE_LISTEN", ":8080"},
	{"engine-url", "SLOTGATE_ENGINE_URL", "http://127.0.0.1:8000"},
	{"engine-grpc-url", "SLOTGATE_ENGINE_GRPC_URL", "(unset)"},
	{"grpc-listen", "SLOTGATE_GRPC_LISTEN", "(unset)"},
	{"grpc-max-message-bytes", "SLOTGATE_GRPC_MAX_MESSAGE_BYTES", "67108864"},
	{"admin-listen", "SLOTGATE_ADMIN_LISTEN", ":9090"},
	{"engine-health-path", "SLOTGATE_ENGINE_HEALTH_PATH", "/health"},
	{"passthrough-paths", "SLOTGATE_PASSTHROUGH_PATHS", "/health,/v1/models,/metrics,/version"},
	{"max-request-body-bytes", "SLOTGATE_MAX_REQUEST_BODY_BYTES", "33554432"},
	{"max-buffered-body-bytes", "SLOTGATE_MAX_BUFFERED_BODY_BYTES", "268435456"},
	{"request-header-timeout", "SLOTGATE_REQUEST_HEADER_TIMEOUT", "30s"},
	{"front-end", "SLOTGATE_FRONT_END", "true"},
	{"stream-relay", "SLOTGATE_STREAM_RELAY", "auto"},
	{"max-procs", "SLOTGATE_MAX_PROCS", "auto"},
	{"relay-loops", "SLOTGATE_RELAY_LOOPS", "auto"},
	{"request-body-timeout", "SLOTGATE_REQUEST_BODY_TIMEOUT", "60s"},
	{"retry-after", "SLOTGATE_RETRY_AFTER", "1s"},
	{"shutdown-timeout", "SLOTGATE_SHUTDOWN_TIMEOUT", "60s"},
	{"drain-delay", "SLOTGATE_DRAIN_DELAY", "5s"},
	{"abort-grace", "SLOTGATE_ABORT_GRACE", "5ms"},
	{"first-token-timeout", "SLOTGATE_FIRST_TOKEN_TIMEOUT", "0s"},
	{"first-token-timeout-per-1k-tokens", "SLOTGATE_FIRST_TOKEN_TIMEOUT_PER_1K_TOKENS", "0s"},
	{"engine-metrics-interval", "SLOTGATE_ENGINE_METRICS_INTERVAL", "200ms"},
	{"engine-metrics-dialect", "SLOTGATE_ENGINE_METRICS_DIALECT", "auto"},
	{"serve-engine-metrics", "SLOTGATE_SERVE_ENGINE_METRICS", "auto"},
	{"kv-total-blocks", "SLOTGATE_KV_TOTAL_BLOCKS", "0"},
	{"block-size", "SLOTGATE_BLOCK_SIZE", "0"},
	{"max-num-batched-tokens", "SLOTGATE_MAX_NUM_BATCHED_TOKENS", "0"},
	{"data-parallel-size", "SLOTGATE_DATA_PARALLEL_SIZE", "0"},
	{"active-decode-blocks-threshold", "DYN_ACTIVE_DECODE_BLOCKS_THRESHOLD", "(unset)"},
	{"active-prefill-tokens-threshold", "DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD", "(unset)"},
	{"active-prefill-tokens-threshold-frac", "DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD_FRAC", "(unset)"},
	{"reject-when-busy", "SLOTGATE_REJECT_WHEN_BUSY", "false"},
	{"orca-header", "SLOTGATE_ORCA_HEADER", "false"},
	{"orca-format", "SLOTGATE_ORCA_FORMAT", "text"},
	{"dynamo-event-plane", "SLOTGATE_DYNAMO_EVENT_PLANE", "(unset)"},
	{"dyn-event-plane", "DYN_EVENT_PLANE", "(unset)"},
	{"nats-server", "NATS_SERVER", "(unset)"},
	{"dynamo-endpoint", "SLOTGATE_DYNAMO_ENDPOINT", "dyn://dynamo.backend.generate"},
	{"dynamo-worker-id", "SLOTGATE_DYNAMO_WORKER_ID", "(unset)"},
	{"pod-name", "POD_NAME", "(unset)"},
	{"dynamo-event-heartbeat", "SLOTGATE_DYNAMO_EVENT_HEARTBEAT", "10s"},
	{"admin-grpc-listen", "SLOTGATE_ADMIN_GRPC_LISTEN", ":9091"},
	{"admission-config", "SLOTGATE_ADMISSION_CONFIG", "(unset)"},
	{"model-name", "SLOTGATE_MODEL_NAME", "default"},
	{"access-log", "SLOTGATE_ACCESS_LOG", "true"},
	{"admin-token-file", "SLOTGATE_ADMIN_TOKEN_FILE", "(unset)"},
	{"enable-profiling", "SLOTGATE_ENABLE_PROFILING", "false"},
	{"log-level", "SLOTGATE_LOG_LEVEL", "info"},
	{"log-format", "SLOTGATE_LOG_FORMAT", "json"},
}

// otherNames are the variables read after a setting's own, in order, as
// --help lists them under it.
var otherNames = map[string][]string{
	"engine-request-limit":         {"DYN_ENGINE_REQUEST_LIMIT"},
	"engine-request-waiting-limit": {"DYN_BACKEND_ADMISSION_ENGINE_WAIT_LIMIT"},
	"request-queue-limit":          {"DYN_DYNAMO_REQUEST_QUEUE_LIMIT"},
	"queue-timeout":                {"DYN_DYNAMO_REQUEST_QUEUE_TIMEOUT_MS"},
}

// bad names one expected problem: who gave the value ("--flag" or the
// variable) and the value as given.
type bad struct {
	who, value string
}

// errorLines splits a joined Load error into its lines.
func errorLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// checkProblems fails t unless err has exactly one line per entry of want,
// each starting with "who:" and quoting the value.
func checkProblems(t *testing.T, err error, want ...bad) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("Load: unexpected error:\n%v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("Load: no error, want %d problem(s): %v", len(want), want)
	}
	lines := errorLines(err)
	if len(lines) != len(want) {
		t.Fatalf("Load error has %d line(s), want %d:\n%v", len(lines), len(want), err)
	}
	used := make([]bool, len(lines))
	for _, w := range want {
		found := false
		for i, l := range lines {
			if !used[i] && strings.HasPrefix(l, w.who+": ") && strings.Contains(l, strconv.Quote(w.value)) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("no error line names %s and %q; got:\n%v", w.who, w.value, err)
		}
	}
}

// mustLoad calls Load and fails t on error.
func mustLoad(t *testing.T, args []string, env map[string]string) config.Config {
	t.Helper()
	c, err := config.Load(args, env)
	if err != nil {
		t.Fatalf("Load(%q, %q): %v", args, env, err)
	}
	return c
}

// validationCase is one configuration, the problems it must give (none
// when empty), and what to check of the Config when it loads.
type validationCase struct {
	name  string
	args  []string
	env   map[string]string
	probs []bad
	check func(*testing.T, config.Config)
}

// runValidation loads each case as a subtest and checks it.
func runValidation(t *testing.T, cases []validationCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			if env == nil {
				env = map[string]string{}
			}
			c, err := config.Load(tc.args, env)
			checkProblems(t, err, tc.probs...)
			if err == nil && tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}
