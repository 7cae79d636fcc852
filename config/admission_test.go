package config_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/config"
)

// Dynamo 1.7's names of the admission settings, and the names read after
// them.
const (
	varN       = "DYN_BACKEND_ADMISSION_ENGINE_REQUEST_LIMIT"
	legacyN    = "DYN_ENGINE_REQUEST_LIMIT"
	varW       = "DYN_BACKEND_ADMISSION_ENGINE_REQUEST_WAITING_LIMIT"
	otherW     = "DYN_BACKEND_ADMISSION_ENGINE_WAIT_LIMIT"
	varQ       = "DYN_BACKEND_ADMISSION_REQUEST_QUEUE_LIMIT"
	legacyQ    = "DYN_DYNAMO_REQUEST_QUEUE_LIMIT"
	varTimeout = "SLOTGATE_QUEUE_TIMEOUT"
	msTimeout  = "DYN_DYNAMO_REQUEST_QUEUE_TIMEOUT_MS"
	varDelay   = "DYN_DYNAMO_REQUEST_QUEUE_ENABLE_CONTROLLED_DELAY"
	varLIFO    = "DYN_DYNAMO_REQUEST_QUEUE_ENABLE_ADAPTIVE_LIFO"
	varPerRank = "SLOTGATE_PER_RANK_LIMITS"
	needsLimit = "a queue needs an engine limit: set --engine-request-limit or --engine-request-waiting-limit"
)

// TestAdmissionPrecedence checks flag > canonical variable > other name >
// default for N, W, Q and the queue timeout, what Sources says each time,
// and the warning when the canonical name shadows a different value.
func TestAdmissionPrecedence(t *testing.T) {
	str := func(v any) string { return fmt.Sprint(v) }
	for _, tc := range []struct {
		flag, canonical, other string
		base                   map[string]string // always in the environment
		get                    func(config.Config) string
		def                    string // value with the default
		flagVal, flagWant      string // given as the flag, gives this
		canVal, canWant        string // given by the canonical variable
		otherVal, otherWant    string // given by the other name
	}{
		{"engine-request-limit", varN, legacyN, nil,
			func(c config.Config) string { return str(c.EngineRequestLimit) }, "0", "7", "7", "5", "5", "3", "3"},
		{"engine-request-waiting-limit", varW, otherW, nil,
			func(c config.Config) string { return str(c.EngineRequestWaitingLimit) }, "0", "7", "7", "5", "5", "3", "3"},
		{"request-queue-limit", varQ, legacyQ, map[string]string{varN: "4"},
			func(c config.Config) string { return str(c.RequestQueueLimit) }, "16", "9", "9", "5", "5", "3", "3"},
		{"queue-timeout", varTimeout, msTimeout, nil,
			func(c config.Config) string { return str(c.QueueTimeout) }, "0s", "750ms", "750ms", "2s", "2s", "1500", "1.5s"},
	} {
		with := func(kv ...string) map[string]string {
			m := maps.Clone(tc.base)
			if m == nil {
				m = map[string]string{}
			}
			for i := 0; i < len(kv); i += 2 {
				m[kv[i]] = kv[i+1]
			}
			return m
		}
		flag := []string{"--" + tc.flag + "=" + tc.flagVal}
		for _, c := range []struct {
			name     string
			args     []string
			env      map[string]string
			want, by string
			warn     bool // that tc.canonical shadows tc.other
		}{
			{"default", nil, with(), tc.def, "default", false},
			{"every name empty", nil, with(tc.canonical, "", tc.other, ""), tc.def, "default", false},
			{"other name", nil, with(tc.other, tc.otherVal), tc.otherWant, tc.other, false},
			{"other name under an empty canonical", nil, with(tc.canonical, "", tc.other, tc.otherVal), tc.otherWant, tc.other, false},
			{"canonical", nil, with(tc.canonical, tc.canVal), tc.canWant, tc.canonical, false},
			{"canonical over other name", nil, with(tc.canonical, tc.canVal, tc.other, tc.otherVal), tc.canWant, tc.canonical, true},
			{"canonical over bad other name", nil, with(tc.canonical, tc.canVal, tc.other, "bad"), tc.canWant, tc.canonical, true},
			{"flag", flag, with(), tc.flagWant, "flag", false},
			{"flag over other name", flag, with(tc.other, tc.otherVal), tc.flagWant, "flag", false},
			{"flag over both", flag, with(tc.canonical, tc.canVal, tc.other, tc.otherVal), tc.flagWant, "flag", false},
			{"flag over bad variables", flag, with(tc.canonical, "bad", tc.other, "bad"), tc.flagWant, "flag", false},
		} {
			t.Run(tc.flag+"/"+c.name, func(t *testing.T) {
				cfg := mustLoad(t, c.args, c.env)
				if got := tc.get(cfg); got != c.want {
					t.Errorf("value = %q, want %q", got, c.want)
				}
				if got := cfg.Sources[tc.flag]; got != c.by {
					t.Errorf("Sources[%q] = %q, want %q", tc.flag, got, c.by)
				}
				if !c.warn {
					if len(cfg.Warnings) != 0 {
						t.Errorf("Warnings = %q, want none", cfg.Warnings)
					}
					return
				}
				if len(cfg.Warnings) != 1 {
					t.Fatalf("Warnings = %q, want one", cfg.Warnings)
				}
				w := cfg.Warnings[0]
				if !strings.HasPrefix(w, tc.canonical+"=") || !strings.Contains(w, tc.other+"=") ||
					!strings.Contains(w, tc.canonical+" wins") {
					t.Errorf("warning %q does not say that %s wins over %s", w, tc.canonical, tc.other)
				}
			})
		}
	}
}

// TestShadowedSameValue: the canonical and the other name set to the same
// value is no conflict, and a duration and its milliseconds are the same.
func TestShadowedSameValue(t *testing.T) {
	for _, env := range []map[string]string{
		{varN: "4", legacyN: "4"},
		{varN: "4", legacyN: " 4 "},
		{varN: "4", varQ: "8", legacyQ: "8"},
		{varTimeout: "5s", msTimeout: "5000"},
		{varTimeout: "1.5s", msTimeout: "1500"},
		{varTimeout: "0s", msTimeout: "0"},
	} {
		if c := mustLoad(t, nil, env); len(c.Warnings) != 0 {
			t.Errorf("%q: Warnings = %q, want none", env, c.Warnings)
		}
	}
	c := mustLoad(t, nil, map[string]string{varTimeout: "5s", msTimeout: "3000"})
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], msTimeout) || c.QueueTimeout != 5*time.Second {
		t.Errorf("5s over 3000 ms: QueueTimeout = %v, Warnings = %q; want 5s and one warning", c.QueueTimeout, c.Warnings)
	}
}

// gate is what TestAdmissionRules checks of a loaded Config.
type gate struct {
	n, w, q int
}

func wantGate(want gate) func(*testing.T, config.Config) {
	return func(t *testing.T, c config.Config) {
		t.Helper()
		if got := (gate{c.EngineRequestLimit, c.EngineRequestWaitingLimit, c.RequestQueueLimit}); got != want {
			t.Errorf("N, W, Q = %+v, want %+v", got, want)
		}
		if on := want.n > 0 || want.w > 0; c.GateOn() != on {
			t.Errorf("GateOn = %v, want %v", c.GateOn(), on)
		}
		if len(c.Warnings) != 0 {
			t.Errorf("Warnings = %q, want none", c.Warnings)
		}
	}
}

// TestAdmissionRules covers the rules between N, W and Q.
func TestAdmissionRules(t *testing.T) {
	runValidation(t, []validationCase{
		// The gate.
		{name: "neither limit: pass-through", check: wantGate(gate{0, 0, 0})},
		{name: "N alone", env: map[string]string{varN: "8"}, check: wantGate(gate{8, 0, 16})},
		{name: "W alone turns the gate on, Q 16", env: map[string]string{varW: "8"}, check: wantGate(gate{0, 8, 16})},
		{name: "W by Dynamo's code's name", env: map[string]string{otherW: "3"}, check: wantGate(gate{0, 3, 16})},
		{name: "W by flag", args: []string{"--engine-request-waiting-limit=2"}, check: wantGate(gate{0, 2, 16})},
		{name: "N and W", args: []string{"--engine-request-limit=64"}, env: map[string]string{varW: "8"},
			check: wantGate(gate{64, 8, 16})},
		{name: "empty flags are unset", args: []string{"--engine-request-limit=", "--engine-request-waiting-limit="},
			env: map[string]string{varN: "4"}, check: wantGate(gate{0, 0, 0})},

		// The token limits.
		{name: "token limits", args: []string{"--engine-request-limit=8", "--engine-prefill-token-limit=16384"},
			env: map[string]string{"SLOTGATE_REQUEST_QUEUE_TOKEN_LIMIT": "65536"},
			check: func(t *testing.T, c config.Config) {
				if c.EnginePrefillTokenLimit != 16384 || c.RequestQueueTokenLimit != 65536 {
					t.Errorf("token limits %d, %d; want 16384, 65536", c.EnginePrefillTokenLimit, c.RequestQueueTokenLimit)
				}
			}},
		{name: "token limits 0 are none", args: []string{"--engine-prefill-token-limit=0", "--request-queue-token-limit=0"},
			check: func(t *testing.T, c config.Config) {
				if c.EnginePrefillTokenLimit != 0 || c.RequestQueueTokenLimit != 0 {
					t.Errorf("token limits %d, %d; want none", c.EnginePrefillTokenLimit, c.RequestQueueTokenLimit)
				}
			}},
		{name: "P without N or W", args: []string{"--engine-prefill-token-limit=1000"},
			probs: []bad{{"--engine-prefill-token-limit", "1000"}}},
		{name: "queue tokens without N or W", env: map[string]string{"SLOTGATE_REQUEST_QUEUE_TOKEN_LIMIT": "10"},
			probs: []bad{{"SLOTGATE_REQUEST_QUEUE_TOKEN_LIMIT", "10"}}},
		{name: "P negative", args: []string{"--engine-request-limit=2", "--engine-prefill-token-limit=-1"},
			probs: []bad{{"--engine-prefill-token-limit", "-1"}}},
		{name: "P not a number", args: []string{"--engine-request-limit=2", "--engine-prefill-token-limit=16k"},
			probs: []bad{{"--engine-prefill-token-limit", "16k"}}},

		// Q under the flag or the canonical variable: Dynamo 1.7's rules.
		{name: "canonical Q 0 with N", env: map[string]string{varN: "4", varQ: "0"}, check: wantGate(gate{4, 0, 0})},
		{name: "canonical Q 1 with N", env: map[string]string{varN: "4", varQ: "1"}, check: wantGate(gate{4, 0, 1})},
		{name: "canonical Q with W", env: map[string]string{varW: "4", varQ: "32"}, check: wantGate(gate{0, 4, 32})},
		{name: "flag Q 0 with W", args: []string{"--request-queue-limit=0"}, env: map[string]string{varW: "4"},
			check: wantGate(gate{0, 4, 0})},
		{name: "canonical Q 0 without a limit", env: map[string]string{varQ: "0"}, check: wantGate(gate{0, 0, 0})},
		{name: "flag Q 0 without a limit", args: []string{"--request-queue-limit=0"}, check: wantGate(gate{0, 0, 0})},
		{name: "canonical Q without a limit", env: map[string]string{varQ: "4"}, probs: []bad{{varQ, "4"}}},
		{name: "flag Q without a limit", args: []string{"--request-queue-limit=16"},
			probs: []bad{{"--request-queue-limit", "16"}}},
		{name: "canonical Q without a limit, legacy N empty", env: map[string]string{legacyN: "", varQ: "2"},
			probs: []bad{{varQ, "2"}}},
		{name: "canonical Q negative", env: map[string]string{varN: "4", varQ: "-1"}, probs: []bad{{varQ, "-1"}}},
		{name: "canonical Q not a number without a limit", env: map[string]string{varQ: "abc"}, probs: []bad{{varQ, "abc"}}},
		{name: "flag Q empty", args: []string{"--request-queue-limit="}, env: map[string]string{varN: "4"},
			probs: []bad{{"--request-queue-limit", ""}}},
		{name: "bad N is one problem, not two", env: map[string]string{varN: "abc", varQ: "4"}, probs: []bad{{varN, "abc"}}},
		{name: "bad W is one problem, not two", args: []string{"--engine-request-waiting-limit=0", "--request-queue-limit=4"},
			probs: []bad{{"--engine-request-waiting-limit", "0"}}},

		// Q under the legacy name: Dynamo 1.5's rules.
		{name: "legacy Q with N", env: map[string]string{varN: "4", legacyQ: "8"}, check: wantGate(gate{4, 0, 8})},
		{name: "legacy Q with legacy N", env: map[string]string{legacyN: "4", legacyQ: "2"}, check: wantGate(gate{4, 0, 2})},
		{name: "legacy Q with N by flag", args: []string{"--engine-request-limit=4"}, env: map[string]string{legacyQ: "3"},
			check: wantGate(gate{4, 0, 3})},
		{name: "legacy Q with N and W", env: map[string]string{varN: "4", varW: "2", legacyQ: "3"}, check: wantGate(gate{4, 2, 3})},
		{name: "legacy Q 0 refused", env: map[string]string{varN: "4", legacyQ: "0"}, probs: []bad{{legacyQ, "0"}}},
		{name: "legacy Q 1 refused", env: map[string]string{varN: "4", legacyQ: "1"}, probs: []bad{{legacyQ, "1"}}},
		{name: "legacy Q ignored without a limit", env: map[string]string{legacyQ: "32"}, check: wantGate(gate{0, 0, 0})},
		{name: "bad legacy Q ignored without a limit", env: map[string]string{legacyQ: "1"}, check: wantGate(gate{0, 0, 0})},

		// Bad N and W name the name that gave them.
		{name: "N 0 canonical", env: map[string]string{varN: "0"}, probs: []bad{{varN, "0"}}},
		{name: "N bad legacy", env: map[string]string{legacyN: "x"}, probs: []bad{{legacyN, "x"}}},
		{name: "W 0", env: map[string]string{varW: "0"}, probs: []bad{{varW, "0"}}},
		{name: "W negative", args: []string{"--engine-request-waiting-limit=-2"}, probs: []bad{{"--engine-request-waiting-limit", "-2"}}},
		{name: "W fraction", env: map[string]string{otherW: "1.5"}, probs: []bad{{otherW, "1.5"}}},
		{name: "W blank", env: map[string]string{varW: " "}, probs: []bad{{varW, " "}}},
		{name: "W overflows", env: map[string]string{varW: "99999999999999999999"}, probs: []bad{{varW, "99999999999999999999"}}},
		{name: "W bad canonical over good other", env: map[string]string{varW: "many", otherW: "4"}, probs: []bad{{varW, "many"}}},

		// Per-rank limits.
		{name: "per rank by flag", args: []string{"--per-rank-limits"}, env: map[string]string{varN: "4"},
			check: func(t *testing.T, c config.Config) { eq(t, "PerRankLimits", c.PerRankLimits, true) }},
		{name: "per rank yes", env: map[string]string{varPerRank: "Yes"},
			check: func(t *testing.T, c config.Config) { eq(t, "PerRankLimits", c.PerRankLimits, true) }},
		{name: "per rank off", env: map[string]string{varPerRank: "off"},
			check: func(t *testing.T, c config.Config) { eq(t, "PerRankLimits", c.PerRankLimits, false) }},
		{name: "per rank flag over variable", args: []string{"--per-rank-limits=0"}, env: map[string]string{varPerRank: "1"},
			check: func(t *testing.T, c config.Config) { eq(t, "PerRankLimits", c.PerRankLimits, false) }},
		{name: "per rank bad", env: map[string]string{varPerRank: "each"}, probs: []bad{{varPerRank, "each"}}},
		{name: "per rank bad flag", args: []string{"--per-rank-limits=2"}, probs: []bad{{"--per-rank-limits", "2"}}},
	})
}

// TestLegacyQueueWithOnlyW: the legacy Q is read only when N is set, so
// with only W it is ignored, and said so, and Q is 16.
func TestLegacyQueueWithOnlyW(t *testing.T) {
	for _, value := range []string{"8", "1", "abc"} {
		c := mustLoad(t, nil, map[string]string{varW: "4", legacyQ: value})
		if c.RequestQueueLimit != 16 || !c.GateOn() {
			t.Errorf("%s=%s: Q = %d, GateOn %v; want 16, on", legacyQ, value, c.RequestQueueLimit, c.GateOn())
		}
		if len(c.Warnings) != 1 || !strings.HasPrefix(c.Warnings[0], legacyQ+"=") ||
			!strings.Contains(c.Warnings[0], "ignored") || !strings.Contains(c.Warnings[0], varW) {
			t.Errorf("%s=%s: Warnings = %q, want one saying it is ignored with only %s", legacyQ, value, c.Warnings, varW)
		}
	}
}

// TestQueueNeedsEngineLimit checks the wording of Dynamo 1.7's start-up
// failure.
func TestQueueNeedsEngineLimit(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, map[string]string{varQ: "4"}, varQ + ": " + needsLimit + `, got "4"`},
		{[]string{"--request-queue-limit=8"}, map[string]string{}, "--request-queue-limit: " + needsLimit + `, got "8"`},
	} {
		_, err := config.Load(tc.args, tc.env)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Load(%q, %q) = %v, want %q", tc.args, tc.env, err, tc.want)
		}
	}
}

// TestQueueTimeoutRules covers the timeout's two forms and the switches
// that act on it.
func TestQueueTimeoutRules(t *testing.T) {
	timeout := func(want time.Duration) func(*testing.T, config.Config) {
		return func(t *testing.T, c config.Config) { t.Helper(); eq(t, "QueueTimeout", c.QueueTimeout, want) }
	}
	runValidation(t, []validationCase{
		{name: "milliseconds", env: map[string]string{msTimeout: "250"}, check: timeout(250 * time.Millisecond)},
		{name: "milliseconds padded", env: map[string]string{msTimeout: " 5000 "}, check: timeout(5 * time.Second)},
		{name: "0 milliseconds", env: map[string]string{msTimeout: "0"}, check: timeout(0)},
		{name: "largest milliseconds", env: map[string]string{msTimeout: "9223372036854"},
			check: timeout(9223372036854 * time.Millisecond)},
		{name: "milliseconds overflow", env: map[string]string{msTimeout: "9223372036855"}, probs: []bad{{msTimeout, "9223372036855"}}},
		{name: "milliseconds negative", env: map[string]string{msTimeout: "-1"}, probs: []bad{{msTimeout, "-1"}}},
		{name: "milliseconds with a unit", env: map[string]string{msTimeout: "5s"}, probs: []bad{{msTimeout, "5s"}}},
		{name: "milliseconds fraction", env: map[string]string{msTimeout: "1.5"}, probs: []bad{{msTimeout, "1.5"}}},
		{name: "duration without unit", env: map[string]string{varTimeout: "5000"}, probs: []bad{{varTimeout, "5000"}}},

		{name: "controlled delay on by default", env: map[string]string{varTimeout: "5s"}, check: timeout(5 * time.Second)},
		{name: "controlled delay true", env: map[string]string{varTimeout: "5s", varDelay: "TRUE"}, check: timeout(5 * time.Second)},
		{name: "controlled delay false clears the timeout", env: map[string]string{varTimeout: "5s", varDelay: "false"},
			check: timeout(0)},
		{name: "controlled delay off clears milliseconds", env: map[string]string{msTimeout: "5000", varDelay: "off"},
			check: timeout(0)},
		{name: "controlled delay 0 by flag", args: []string{"--queue-controlled-delay=0", "--queue-timeout=2s"}, check: timeout(0)},
		{name: "controlled delay flag over variable", args: []string{"--queue-controlled-delay"},
			env: map[string]string{varTimeout: "1s", varDelay: "no"}, check: timeout(time.Second)},
		{name: "controlled delay bad", env: map[string]string{varDelay: "sometimes"}, probs: []bad{{varDelay, "sometimes"}}},
		{name: "bad timeout checked with controlled delay off", env: map[string]string{msTimeout: "soon", varDelay: "false"},
			probs: []bad{{msTimeout, "soon"}}},

		{name: "adaptive LIFO with a timeout", args: []string{"--queue-adaptive-lifo", "--queue-timeout=1s"},
			check: func(t *testing.T, c config.Config) {
				eq(t, "QueueAdaptiveLIFO", c.QueueAdaptiveLIFO, true)
				eq(t, "warnings", len(c.Warnings), 0)
			}},
		{name: "adaptive LIFO by variable", env: map[string]string{varLIFO: "on", msTimeout: "100"},
			check: func(t *testing.T, c config.Config) { eq(t, "QueueAdaptiveLIFO", c.QueueAdaptiveLIFO, true) }},
		{name: "adaptive LIFO off", env: map[string]string{varLIFO: "0"},
			check: func(t *testing.T, c config.Config) { eq(t, "QueueAdaptiveLIFO", c.QueueAdaptiveLIFO, false) }},
		{name: "adaptive LIFO bad", env: map[string]string{varLIFO: "lifo"}, probs: []bad{{varLIFO, "lifo"}}},
	})
}

// TestAdaptiveLIFOWithoutTimeoutWarns: without a queue timeout no request
// is ever rejected for its wait, so adaptive LIFO never acts.
func TestAdaptiveLIFOWithoutTimeoutWarns(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		who  string // named in the warning
		says string // and this
	}{
		{"no timeout", []string{"--queue-adaptive-lifo"}, map[string]string{}, "--queue-adaptive-lifo", "until one is set"},
		{"zero timeout", nil, map[string]string{varLIFO: "yes", msTimeout: "0"}, varLIFO, "until one is set"},
		{"controlled delay off", []string{"--queue-adaptive-lifo", "--queue-timeout=5s"}, map[string]string{varDelay: "false"},
			varDelay, "switches the queue timeout off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustLoad(t, tc.args, tc.env)
			if !c.QueueAdaptiveLIFO || c.QueueTimeout != 0 {
				t.Fatalf("QueueAdaptiveLIFO, QueueTimeout = %v, %v; want true, 0", c.QueueAdaptiveLIFO, c.QueueTimeout)
			}
			if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], tc.who) || !strings.Contains(c.Warnings[0], tc.says) {
				t.Errorf("Warnings = %q, want one naming %s and saying %q", c.Warnings, tc.who, tc.says)
			}
		})
	}
}

// TestBadAdmissionValuesAllReported: each bad admission value is its own
// line, naming the flag or variable that gave it, legacy names included.
func TestBadAdmissionValuesAllReported(t *testing.T) {
	_, err := config.Load([]string{"--engine-request-waiting-limit=none", "--queue-adaptive-lifo=sure"}, map[string]string{
		legacyN:    "-4",
		legacyQ:    "1",
		msTimeout:  "1s",
		varPerRank: "both",
		varDelay:   "2",
	})
	checkProblems(t, err,
		bad{legacyN, "-4"},
		bad{"--engine-request-waiting-limit", "none"},
		bad{legacyQ, "1"},
		bad{varPerRank, "both"},
		bad{msTimeout, "1s"},
		bad{varDelay, "2"},
		bad{"--queue-adaptive-lifo", "sure"},
	)
}
