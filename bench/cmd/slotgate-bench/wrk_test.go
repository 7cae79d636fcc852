package main

import (
	"strings"
	"testing"
	"time"
)

const wrkSample = `Running 3s test @ http://127.0.0.1:8080/fast
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.47ms    1.03ms  15.83ms   89.11%
    Req/Sec    26.12k     1.31k   28.41k    70.00%
  Latency Distribution
     50%    2.31ms
     75%    2.71ms
     90%    3.31ms
     99%    6.26ms
  78012 requests in 3.00s, 7.51MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 12
Requests/sec:  25989.43
Transfer/sec:      2.50MB
`

func TestParseWrk(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      wrkResult
		err       string
	}{
		{"full", wrkSample, wrkResult{requests: 78012, perSecond: 25989.43, p50: 2310 * time.Microsecond, p99: 6260 * time.Microsecond, errors: 15}, ""},
		{"units", strings.NewReplacer("2.31ms", "812.00us", "6.26ms", "1.20s", "  Socket errors: connect 0, read 2, write 0, timeout 1\n", "", "  Non-2xx or 3xx responses: 12\n", "").Replace(wrkSample),
			wrkResult{requests: 78012, perSecond: 25989.43, p50: 812 * time.Microsecond, p99: 1200 * time.Millisecond}, ""},
		{"no latency", strings.ReplaceAll(wrkSample, "%", " pct"), wrkResult{}, "no latency distribution"},
		{"no rate", strings.ReplaceAll(wrkSample, "Requests/sec", "Reqs"), wrkResult{}, "Requests/sec"},
		{"empty", "", wrkResult{}, "requests in"},
	} {
		got, err := parseWrk(tc.out)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func FuzzParseWrk(f *testing.F) {
	f.Add(wrkSample)
	f.Add("1 requests in 1s\nRequests/sec: 1\n  50% 1m\n")
	f.Fuzz(func(t *testing.T, out string) {
		r, err := parseWrk(out)
		if err != nil {
			return
		}
		if r.requests < 0 || r.perSecond < 0 || r.p50 < 0 || r.p99 < 0 || r.errors < 0 {
			t.Fatalf("parseWrk: negative figure in %+v", r)
		}
	})
}

func TestWrkScript(t *testing.T) {
	s := wrkScript()
	for _, want := range []string{`wrk.method = "POST"`, `"Content-Type"`, `\"max_tokens\"`} {
		if !strings.Contains(s, want) {
			t.Errorf("script missing %q:\n%s", want, s)
		}
	}
}

func TestNeedWrk(t *testing.T) {
	scs := []scenario{{name: "fast-c1"}, {name: "fast-wrk-c64", wrk: true}}
	for _, tc := range []struct {
		name, wrk string
		named     bool
		kept      int
		err       bool
	}{
		{"installed", "/usr/bin/wrk", false, 2, false},
		{"missing", "", false, 1, false},
		{"missing, named", "", true, 0, true},
	} {
		kept, skipped, err := needWrk(scs, tc.wrk, tc.named)
		if len(kept) != tc.kept || (err != nil) != tc.err {
			t.Errorf("%s: kept %d, skipped %v, error %v; want %d kept, error %v", tc.name, len(kept), skipped, err, tc.kept, tc.err)
		}
	}
}
