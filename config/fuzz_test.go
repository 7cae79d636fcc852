package config_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/config"
)

// fuzzSeeds are the interesting values of the capacity settings and the
// queue timeout.
var fuzzSeeds = []string{
	"", " ", "0", "1", "2", "3", "16", "64", "-1", "-0", "+5", "007", " 4 ", "\t8\n",
	"abc", "1.5", "1e3", "0x10", "99", "100", "199", "200", "503", "529", "600", "999", "1000",
	" 503 ", "not-a-code", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
	"99999999999999999999", "\u00a0503\u00a0", "5\x0003", "\xff",
	"5s", "250ms", "-1s", "1500", "9223372036854775807", "9223372036854",
}

// fuzzName is one setting of FuzzLoad: its flag, its own variable, and the
// other name read after it ("" for none).
type fuzzName struct{ flag, env, other string }

var (
	fuzzN       = fuzzName{"engine-request-limit", "DYN_BACKEND_ADMISSION_ENGINE_REQUEST_LIMIT", "DYN_ENGINE_REQUEST_LIMIT"}
	fuzzW       = fuzzName{"engine-request-waiting-limit", "DYN_BACKEND_ADMISSION_ENGINE_REQUEST_WAITING_LIMIT", "DYN_BACKEND_ADMISSION_ENGINE_WAIT_LIMIT"}
	fuzzQ       = fuzzName{"request-queue-limit", "DYN_BACKEND_ADMISSION_REQUEST_QUEUE_LIMIT", "DYN_DYNAMO_REQUEST_QUEUE_LIMIT"}
	fuzzTimeout = fuzzName{"queue-timeout", "SLOTGATE_QUEUE_TIMEOUT", "DYN_DYNAMO_REQUEST_QUEUE_TIMEOUT_MS"}
	fuzzStatus  = fuzzName{"overload-status-code", "DYN_HTTP_OVERLOAD_STATUS_CODE", ""}
	fuzzRank    = fuzzName{"per-rank-limits", "SLOTGATE_PER_RANK_LIMITS", ""}
	fuzzDelay   = fuzzName{"queue-controlled-delay", "DYN_DYNAMO_REQUEST_QUEUE_ENABLE_CONTROLLED_DELAY", ""}
	fuzzLIFO    = fuzzName{"queue-adaptive-lifo", "DYN_DYNAMO_REQUEST_QUEUE_ENABLE_ADAPTIVE_LIFO", ""}
)

// fuzzGiven is how FuzzLoad gave one setting: the text in effect, and
// where it came from as Config.Sources says it.
type fuzzGiven struct {
	text, source string
}

// who is how a problem names the setting.
func (g fuzzGiven) who(n fuzzName) string {
	switch g.source {
	case "flag":
		return "--" + n.flag
	case "default":
		return "--" + n.flag + " (default)"
	}
	return g.source
}

// give puts value into args or env after choice: 0 the flag, 1 the
// variable, 2 the other name (the variable when there is none), 3 the
// variable with the other name also set, to "7", and returns what Load
// should make of it. An empty variable is unset.
func give(n fuzzName, value string, choice uint32, args *[]string, env map[string]string) fuzzGiven {
	if n.other == "" && choice >= 2 {
		choice = 1
	}
	switch choice {
	case 0:
		*args = append(*args, "--"+n.flag+"="+value)
		return fuzzGiven{value, "flag"}
	case 2:
		env[n.other] = value
		if value == "" {
			return fuzzGiven{"", "default"}
		}
		return fuzzGiven{value, n.other}
	case 3:
		env[n.other] = "7"
		env[n.env] = value
		if value == "" {
			return fuzzGiven{"7", n.other}
		}
		return fuzzGiven{value, n.env}
	}
	env[n.env] = value
	if value == "" {
		return fuzzGiven{"", "default"}
	}
	return fuzzGiven{value, n.env}
}

// fuzzBool is the switch's value for text, and whether text is a switch.
func fuzzBool(text string) (value, ok bool) {
	switch strings.ToLower(strings.TrimSpace(text)) {
	case "1", "t", "true", "on", "yes":
		return true, true
	case "0", "f", "false", "off", "no":
		return false, true
	}
	return false, false
}

// FuzzLoad feeds arbitrary values of the admission settings (N, W, Q, the
// queue timeout, the overload status and the three switches) to Load, each
// as a flag, its variable or its other name (chosen by the bits of how).
// Load must not panic; a problem must name the flag or variable that gave
// a value and quote it; and a Config it accepts must follow the rules.
func FuzzLoad(f *testing.F) {
	for i, n := range fuzzSeeds {
		q := fuzzSeeds[(i*7+3)%len(fuzzSeeds)]
		s := fuzzSeeds[(i*11+5)%len(fuzzSeeds)]
		w := fuzzSeeds[(i*13+1)%len(fuzzSeeds)]
		f.Add(n, w, q, s, fuzzSeeds[(i*5+2)%len(fuzzSeeds)], fuzzSwitches[i%len(fuzzSwitches)], uint32(i)*2654435761)
	}
	f.Add("4", "", "16", "529", "0s", "", uint32(0))
	f.Add("4", "", "1", "503", "5s", "yes", uint32(0x7fff))
	f.Add("0", "abc", "99", "", "", "no", uint32(2))
	f.Add("", "8", "3", "1000", "1500", "on", uint32(0x0a2a))
	f.Add("", "", "4", " 999 ", "-1", "maybe", uint32(0x155))
	f.Add("", "", "0", "529", "250ms", "TRUE", uint32(0x1003))
	f.Add("1", "2", " 2 ", "529", "9223372036854775807", "Off", uint32(0x3aa0))

	f.Fuzz(func(t *testing.T, limit, wait, queue, status, timeout, sw string, how uint32) {
		var args []string
		env := map[string]string{}
		n := give(fuzzN, limit, how&3, &args, env)
		w := give(fuzzW, wait, how>>2&3, &args, env)
		q := give(fuzzQ, queue, how>>4&3, &args, env)
		tm := give(fuzzTimeout, timeout, how>>6&3, &args, env)
		st := give(fuzzStatus, status, how>>8&1, &args, env)
		// Each switch is absent, or given sw by its variable or flag.
		switches := map[fuzzName]fuzzGiven{}
		for i, s := range []fuzzName{fuzzRank, fuzzDelay, fuzzLIFO} {
			if c := how >> (9 + 2*i) & 3; c < 2 {
				switches[s] = give(s, sw, c, &args, env)
			}
		}
		c, err := config.Load(args, env)
		given := map[fuzzName]fuzzGiven{fuzzN: n, fuzzW: w, fuzzQ: q, fuzzTimeout: tm, fuzzStatus: st}
		for s, g := range switches {
			given[s] = g
		}
		for s, g := range given {
			if got := c.Sources[s.flag]; got != g.source {
				t.Fatalf("Sources[%q] = %q, want %q", s.flag, got, g.source)
			}
		}

		// The overload status never stops start-up, and agrees with
		// ParseOverloadStatus, warning exactly when it falls back.
		code, ok := config.ParseOverloadStatus(st.text)
		if st.source == "default" {
			code, ok = config.DefaultOverloadStatus, true
		}
		if c.OverloadStatus != code {
			t.Errorf("OverloadStatus = %d, ParseOverloadStatus(%q) = %d", c.OverloadStatus, st.text, code)
		}
		wantLIFOWarning := c.QueueAdaptiveLIFO && c.QueueTimeout == 0
		var statusWarned, lifoWarned bool
		for _, warning := range c.Warnings {
			switch {
			case strings.HasPrefix(warning, st.who(fuzzStatus)+": "):
				statusWarned = true
			case strings.Contains(warning, "adaptive LIFO") || strings.Contains(warning, "does nothing until"):
				lifoWarned = true
			case strings.HasPrefix(warning, fuzzQ.other+"=") && strings.Contains(warning, "is ignored"):
				if q.source != fuzzQ.other || n.text != "" || w.text == "" {
					t.Errorf("warning %q, yet Q from %s, N %q, W %q", warning, q.source, n.text, w.text)
				}
			case strings.Contains(warning, "are both set"):
			default:
				t.Errorf("unexpected warning %q", warning)
			}
		}
		if statusWarned == ok {
			t.Errorf("status %q (usable %v): Warnings = %q", st.text, ok, c.Warnings)
		}

		if err != nil {
			// Every problem names the source of a fuzzed value and quotes
			// it.
			for _, line := range strings.Split(err.Error(), "\n") {
				found := false
				for s, g := range given {
					if strings.HasPrefix(line, g.who(s)+": ") && strings.Contains(line, strconv.Quote(g.text)) {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("error line names no fuzzed setting with its value: %q", line)
				}
			}
			return
		}
		if wantLIFOWarning != lifoWarned {
			t.Errorf("QueueAdaptiveLIFO = %v, QueueTimeout = %v: Warnings = %q", c.QueueAdaptiveLIFO, c.QueueTimeout, c.Warnings)
		}

		// N and W: unset ("" by flag, or no variable) is 0, else the
		// positive integer given.
		for _, l := range []struct {
			g   fuzzGiven
			got int
		}{{n, c.EngineRequestLimit}, {w, c.EngineRequestWaitingLimit}} {
			if l.g.text == "" {
				if l.got != 0 {
					t.Errorf("limit %d from no text", l.got)
				}
				continue
			}
			if v, err := strconv.Atoi(strings.TrimSpace(l.g.text)); err != nil || v != l.got || v <= 0 {
				t.Errorf("limit = %d from %q", l.got, l.g.text)
			}
		}
		if c.GateOn() != (c.EngineRequestLimit > 0 || c.EngineRequestWaitingLimit > 0) {
			t.Errorf("GateOn = %v with N = %d, W = %d", c.GateOn(), c.EngineRequestLimit, c.EngineRequestWaitingLimit)
		}

		// Q after the rules of the name that gave it.
		qv, qerr := strconv.Atoi(strings.TrimSpace(q.text))
		switch {
		case !c.GateOn():
			if c.RequestQueueLimit != 0 {
				t.Errorf("gate off, yet RequestQueueLimit = %d", c.RequestQueueLimit)
			}
			if q.source != "default" && q.source != fuzzQ.other && (qerr != nil || qv != 0) {
				t.Errorf("Q %q from %s accepted without an engine limit", q.text, q.source)
			}
		case q.source == "default":
			eq(t, "default RequestQueueLimit", c.RequestQueueLimit, 16)
		case q.source == fuzzQ.other && c.EngineRequestLimit == 0:
			eq(t, "RequestQueueLimit with a legacy Q and only W", c.RequestQueueLimit, 16)
		case q.source == fuzzQ.other:
			if qerr != nil || qv != c.RequestQueueLimit || qv < 2 {
				t.Errorf("legacy Q %q gave RequestQueueLimit = %d", q.text, c.RequestQueueLimit)
			}
		default:
			if qerr != nil || qv != c.RequestQueueLimit || qv < 0 {
				t.Errorf("Q %q from %s gave RequestQueueLimit = %d", q.text, q.source, c.RequestQueueLimit)
			}
		}

		// The switches, and the timeout they may switch off.
		want := map[fuzzName]bool{fuzzRank: false, fuzzDelay: true, fuzzLIFO: false}
		for s, g := range switches {
			if g.source == "default" {
				continue // an empty variable: unset
			}
			v, ok := fuzzBool(g.text)
			if !ok {
				t.Fatalf("%s %q accepted", s.flag, g.text)
			}
			want[s] = v
		}
		eq(t, "PerRankLimits", c.PerRankLimits, want[fuzzRank])
		eq(t, "QueueAdaptiveLIFO", c.QueueAdaptiveLIFO, want[fuzzLIFO])
		var timeoutWant time.Duration
		switch {
		case tm.source == "default":
		case tm.source == fuzzTimeout.other:
			ms, err := strconv.ParseInt(strings.TrimSpace(tm.text), 10, 64)
			if err != nil || ms < 0 {
				t.Fatalf("queue timeout %q from %s accepted", tm.text, tm.source)
			}
			timeoutWant = time.Duration(ms) * time.Millisecond
		default:
			d, err := time.ParseDuration(strings.TrimSpace(tm.text))
			if err != nil || d < 0 {
				t.Fatalf("queue timeout %q from %s accepted", tm.text, tm.source)
			}
			timeoutWant = d
		}
		if !want[fuzzDelay] {
			timeoutWant = 0
		}
		eq(t, "QueueTimeout", c.QueueTimeout, timeoutWant)
	})
}

// fuzzSwitches are interesting values of the switches.
var fuzzSwitches = []string{"", "true", "false", "1", "0", "on", "off", "yes", "no", "ON", "No", "t", "F", "y", "maybe", " true "}

// FuzzParseOverloadStatus checks that ParseOverloadStatus always gives a
// status from 200 through 999, the given one when ok, and 529 otherwise.
func FuzzParseOverloadStatus(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	for _, tc := range overloadTable {
		f.Add(tc.value)
	}
	f.Fuzz(func(t *testing.T, s string) {
		code, ok := config.ParseOverloadStatus(s)
		if code < 200 || code > 999 {
			t.Fatalf("ParseOverloadStatus(%q) = %d, outside 200..999", s, code)
		}
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if ok {
			if err != nil || n != code {
				t.Fatalf("ParseOverloadStatus(%q) = %d, true; Atoi of the trimmed value = %d, %v", s, code, n, err)
			}
		} else {
			if code != config.DefaultOverloadStatus {
				t.Fatalf("ParseOverloadStatus(%q) = %d, false; want the fallback %d", s, code, config.DefaultOverloadStatus)
			}
			if err == nil && n >= 200 && n <= 999 {
				t.Fatalf("ParseOverloadStatus(%q) refused the usable status %d", s, n)
			}
		}
	})
}
