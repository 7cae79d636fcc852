package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
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
		checkParsed(t, tc.name, got, err, tc.want, tc.err)
	}
}

// checkParsed checks one case of a parser's table: with wantErr set, an
// error that contains it; else got, without error, equal to want.
func checkParsed[T comparable](t *testing.T, name string, got T, err error, want T, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: error %v, want one containing %q", name, err, wantErr)
		}
		return
	}
	if err != nil || got != want {
		t.Errorf("%s: %+v, %v; want %+v", name, got, err, want)
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

func TestParseStorm(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      stormCounts
		err       string
	}{
		{"after wrk's report", wrkSample + "slotgate-bench storm: served 480 refused 77520 other 12\n", stormCounts{480, 77520, 12}, ""},
		{"trailing spaces", "slotgate-bench storm: served 1 refused 0 other 0  \n", stormCounts{1, 0, 0}, ""},
		{"no line", wrkSample, stormCounts{}, "no \"slotgate-bench storm:\" line"},
		{"a count too large", "slotgate-bench storm: served 1 refused 99999999999999999999 other 0\n", stormCounts{}, "count"},
		{"a word for a count", "slotgate-bench storm: served x refused 0 other 0\n", stormCounts{}, "no \"slotgate-bench storm:\" line"},
	} {
		got, err := parseStorm(tc.out)
		checkParsed(t, tc.name, got, err, tc.want, tc.err)
	}
}

func FuzzParseStorm(f *testing.F) {
	f.Add("slotgate-bench storm: served 480 refused 77520 other 12\n")
	f.Add(wrkSample)
	f.Fuzz(func(t *testing.T, out string) {
		n, err := parseStorm(out)
		if err != nil {
			return
		}
		if n.served < 0 || n.refused < 0 || n.other < 0 {
			t.Fatalf("parseStorm: negative count in %+v", n)
		}
	})
}

func TestStormScript(t *testing.T) {
	s := stormScript()
	for _, want := range []string{`wrk.method = "POST"`, "function response(status", "status == 529", "slotgate-bench storm: served %d refused %d other %d"} {
		if !strings.Contains(s, want) {
			t.Errorf("script missing %q:\n%s", want, s)
		}
	}
}

// TestStormScriptUnderWrk runs the storm's script in a real wrk against a
// server that answers 200, 529, 503 and 502 in turn, and checks wrk's
// counts against the server's: each kind at most the connections' number
// short (the answers wrk had not read when its time ran out).
func TestStormScriptUnderWrk(t *testing.T) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		t.Skip("wrk is not installed (apt-get install wrk; make bench-peers installs it): the storm's script is run only where wrk is")
	}
	statuses := []int{http.StatusOK, 529, http.StatusServiceUnavailable, http.StatusBadGateway}
	var next atomic.Int64
	var sent [4]atomic.Int64 // by kind: served, refused (529 and 503 both), other
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := statuses[(next.Add(1)-1)%int64(len(statuses))]
		if r.Method != http.MethodPost {
			status = http.StatusMethodNotAllowed
		}
		switch status {
		case http.StatusOK:
			sent[0].Add(1)
		case 529, http.StatusServiceUnavailable:
			sent[1].Add(1)
		default:
			sent[2].Add(1)
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	script := filepath.Join(t.TempDir(), "storm.lua")
	if err := os.WriteFile(script, []byte(stormScript()), 0o644); err != nil {
		t.Fatal(err)
	}
	const conns = 4
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, wrk, "-t1", fmt.Sprintf("-c%d", conns), "-d1s", "-s", script, srv.URL+"/work").CombinedOutput()
	if err != nil {
		t.Fatalf("wrk: %v\n%s", err, out)
	}
	got, err := parseStorm(string(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	srv.Close() // every answer the server counted is written
	for i, n := range []int{got.served, got.refused, got.other} {
		server := int(sent[i].Load())
		if n == 0 || n > server || server-n > conns {
			t.Errorf("kind %d (served, refused, other): wrk counted %d, the server answered %d\n%s", i, n, server, out)
		}
	}
}
