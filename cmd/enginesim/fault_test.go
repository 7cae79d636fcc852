package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
	"github.com/slotgate/slotgate/sim"
)

// send makes one HTTP request and returns its status and body.
func send(t *testing.T, c *http.Client, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp.StatusCode, strings.TrimSpace(string(raw))
}

// The fault flags set the faults of HTTP and gRPC alike, the admin call
// replaces them, the counts and the peak in flight show at
// sim.OwnMetricsPath, and a signal ends a never-ending answer (as a
// normal one) and logs the final stats.
func TestRunFaults(t *testing.T) {
	s := startRun(t, []string{"--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0", "--speedup-ratio", "100",
		"--fault-error-rate", "1", "--fault-stall", "250ms"}, nil)
	c := client(t)
	base := "http://" + s.addr
	if code, body := send(t, c, http.MethodPost, base+"/v1/completions", `{"prompt":"hi","max_tokens":2}`); code != http.StatusInternalServerError ||
		!strings.Contains(body, `"type":"InternalServerError"`) {
		t.Fatalf("with --fault-error-rate 1: %d %s, want 500", code, body)
	}
	gen, err := enginepb.NewVllmEngineClient(dialGRPC(t, s.grpc)).Generate(t.Context(), generateReq(2))
	if err == nil {
		_, err = gen.Recv()
	}
	if status.Code(err) != codes.Internal {
		t.Fatalf("gRPC Generate with --fault-error-rate 1: %v, want INTERNAL", err)
	}
	want := `{"reset_rate":0,"error_rate":1,"stall_rate":0,"stall":"250ms","slow_first_token_rate":0,"slow_first_token":"2s","never_end_rate":0}`
	if code, body := send(t, c, http.MethodGet, base+sim.FaultsPath, ""); code != http.StatusOK || body != want {
		t.Fatalf("GET %s: %d %s, want %s", sim.FaultsPath, code, body, want)
	}
	if code, body := send(t, c, http.MethodPut, base+sim.FaultsPath, `{"never_end_rate":"x"}`); code != http.StatusBadRequest ||
		!strings.Contains(body, `never_end_rate: must be a number from 0 through 1, got \"x\"`) {
		t.Fatalf("PUT a bad body: %d %s", code, body)
	}
	if code, body := send(t, c, http.MethodPut, base+sim.FaultsPath, `{"never_end_rate":1}`); code != http.StatusOK {
		t.Fatalf("PUT: %d %s", code, body)
	}
	r := stream(t, c, s.addr, `{"prompt":"hi","max_tokens":4,"ignore_eos":true,"stream":true}`)
	if first, _ := events(r.Body, 4); len(first) != 4 {
		t.Fatalf("the never-ending stream sent %d tokens, want 4", len(first))
	}
	// The stream counts as never-ending once its tokens are all out, a
	// moment after the client has read them.
	neverEnd := sim.MetricFaults + `{fault="never_end"}`
	got := gauges(t, c, base+sim.OwnMetricsPath)
	for deadline := time.Now().Add(waitLimit); got[neverEnd] != "1" && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		got = gauges(t, c, base+sim.OwnMetricsPath)
	}
	for name, want := range map[string]string{
		sim.MetricInFlight: "1", sim.MetricInFlightMax: "1",
		sim.MetricFaults + `{fault="error"}`: "2", neverEnd: "1",
	} {
		if got[name] != want {
			t.Errorf("%s = %q, want %s", name, got[name], want)
		}
	}
	s.signals <- syscall.SIGTERM
	if rest, done := events(r.Body, 0); !done || len(rest) != 0 {
		t.Errorf("after SIGTERM the never-ending stream got %d events, [DONE] %v; want it to end", len(rest), done)
	}
	if code := <-s.code; code != exitOK {
		t.Fatalf("exit status %d, want 0\n%s", code, s.log)
	}
	checkFinalStats(t, s.log.String(), 1, 1)
}

// checkFinalStats finds the last line of the log, "final stats", with the
// peaks given.
func checkFinalStats(t *testing.T, log string, inFlightMax, beforeFirstTokenMax int) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(log), "\n")
	var last struct {
		Msg                 string
		InFlightMax         *int `json:"in_flight_max"`
		BeforeFirstTokenMax *int `json:"before_first_token_max"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Msg != "final stats" ||
		last.InFlightMax == nil || last.BeforeFirstTokenMax == nil {
		t.Fatalf("the last log line is not the final stats (%v):\n%s", err, log)
	}
	if got, want := fmt.Sprint(*last.InFlightMax, *last.BeforeFirstTokenMax), fmt.Sprint(inFlightMax, beforeFirstTokenMax); got != want {
		t.Errorf("final stats in_flight_max, before_first_token_max = %s, want %s", got, want)
	}
}
