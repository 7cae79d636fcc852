package config_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/config"
)

// fuzzSeeds are the interesting values of the three capacity settings.
var fuzzSeeds = []string{
	"", " ", "0", "1", "2", "3", "16", "64", "-1", "-0", "+5", "007", " 4 ", "\t8\n",
	"abc", "1.5", "1e3", "0x10", "99", "100", "199", "200", "503", "529", "600", "999", "1000",
	" 503 ", "not-a-code", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
	"99999999999999999999", "\u00a0503\u00a0", "5\x0003", "\xff",
}

// FuzzLoad feeds arbitrary values of --engine-request-limit,
// --request-queue-limit and --overload-status-code to Load, each as a flag or
// as its variable (chosen by the bits of how). Load must not panic, and a
// Config it accepts must hold usable capacity settings.
func FuzzLoad(f *testing.F) {
	for i, n := range fuzzSeeds {
		q := fuzzSeeds[(i*7+3)%len(fuzzSeeds)]
		s := fuzzSeeds[(i*11+5)%len(fuzzSeeds)]
		f.Add(n, q, s, uint8(i))
	}
	f.Add("4", "16", "529", uint8(0))
	f.Add("4", "1", "503", uint8(7))
	f.Add("0", "abc", "99", uint8(2))
	f.Add("", "1", "1000", uint8(5))
	f.Add("1", "2", " 999 ", uint8(1))

	type input struct {
		flag, env, value string
	}
	f.Fuzz(func(t *testing.T, limit, queue, status string, how uint8) {
		in := []input{
			{"engine-request-limit", "DYN_ENGINE_REQUEST_LIMIT", limit},
			{"request-queue-limit", "DYN_DYNAMO_REQUEST_QUEUE_LIMIT", queue},
			{"overload-status-code", "DYN_HTTP_OVERLOAD_STATUS_CODE", status},
		}
		var args []string
		env := map[string]string{}
		for i, s := range in {
			if how&(1<<i) != 0 {
				args = append(args, "--"+s.flag+"="+s.value)
			} else {
				env[s.env] = s.value
			}
		}
		c, err := config.Load(args, env)

		// The overload status never stops start-up, and agrees with
		// ParseOverloadStatus, warning exactly when it falls back.
		code, ok := config.ParseOverloadStatus(status)
		if err == nil || c.Sources != nil {
			wantWarn := !ok
			if how&4 == 0 && status == "" { // an empty variable is unset
				code, wantWarn = config.DefaultOverloadStatus, false
			}
			if c.OverloadStatus != code {
				t.Errorf("OverloadStatus = %d, ParseOverloadStatus(%q) = %d", c.OverloadStatus, status, code)
			}
			wantWarnings := 0
			if wantWarn {
				wantWarnings = 1
			}
			if len(c.Warnings) != wantWarnings {
				t.Errorf("Warnings = %q for status %q", c.Warnings, status)
			}
		}

		if err != nil {
			// Every problem is about N or Q, names its source and quotes
			// its value.
			for _, line := range strings.Split(err.Error(), "\n") {
				var s input
				found := false
				for i, cand := range in[:2] {
					who := cand.env
					if how&(1<<i) != 0 {
						who = "--" + cand.flag
					}
					if strings.HasPrefix(line, who+": ") {
						s, found = cand, true
						break
					}
				}
				if !found {
					t.Errorf("error line names no capacity setting: %q", line)
				} else if !strings.Contains(line, strconv.Quote(s.value)) {
					t.Errorf("error line does not quote %q: %q", s.value, line)
				}
			}
			return
		}
		if c.EngineRequestLimit < 0 {
			t.Errorf("EngineRequestLimit = %d", c.EngineRequestLimit)
		}
		if c.EngineRequestLimit == 0 && c.RequestQueueLimit != 0 {
			t.Errorf("no engine limit, yet RequestQueueLimit = %d", c.RequestQueueLimit)
		}
		if c.EngineRequestLimit > 0 && c.RequestQueueLimit < 2 {
			t.Errorf("EngineRequestLimit = %d, RequestQueueLimit = %d", c.EngineRequestLimit, c.RequestQueueLimit)
		}
		if c.RequestQueueLimit != 0 && c.RequestQueueLimit < 2 {
			t.Errorf("RequestQueueLimit = %d", c.RequestQueueLimit)
		}
		if c.OverloadStatus < 200 || c.OverloadStatus > 999 {
			t.Errorf("OverloadStatus = %d", c.OverloadStatus)
		}
		if c.EngineRequestLimit > 0 {
			if n, err := strconv.Atoi(strings.TrimSpace(limit)); err != nil || n != c.EngineRequestLimit {
				t.Errorf("EngineRequestLimit = %d from %q", c.EngineRequestLimit, limit)
			}
		} else if limit != "" {
			t.Errorf("engine limit %q accepted as no cap", limit)
		}
	})
}

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
