package limits_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/admin/limits"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
)

// The handler is built for the gate's limiters.
var _ limits.Gate = (*gate.Limiters)(nil)

// off is the limits of a gate that is off.
var off = limiter.Limits{}

// newGate returns the engine's limiters with initial in force, or a
// pass-through for off.
func newGate(t *testing.T, initial limiter.Limits) *gate.Limiters {
	t.Helper()
	if initial == off {
		return gate.EngineLimiter(limiter.NewUnlimited())
	}
	l, err := limiter.New(limiter.Options{
		Slots: initial.Slots, WaitingLimit: initial.WaitingLimit, QueueLen: initial.QueueLen,
		PrefillTokenLimit: initial.PrefillTokenLimit, QueueTokenLimit: initial.QueueTokenLimit,
	})
	if err != nil {
		t.Fatal(err)
	}
	return gate.EngineLimiter(l)
}

// logLine is one call to the handler's Logf.
type logLine struct {
	msg string
	kv  map[string]any
}

// recorder collects what a handler logs and how often it reports a
// change. It is not safe for concurrent use.
type recorder struct {
	t       *testing.T
	logs    []logLine
	changed int
}

func (r *recorder) logf(msg string, kv ...any) {
	if len(kv)%2 != 0 {
		r.t.Errorf("Logf(%q) with an odd number of key-values: %v", msg, kv)
	}
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[fmt.Sprint(kv[i])] = kv[i+1]
	}
	r.logs = append(r.logs, logLine{msg: msg, kv: m})
}

func (r *recorder) options(g limits.Gate) limits.Options {
	return limits.Options{Limits: g, Changed: func() { r.changed++ }, Logf: r.logf}
}

// serve sends one request to a handler over g and returns the answer,
// checking that it is application/json.
func serve(t *testing.T, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	return w
}

func post(body string) *http.Request {
	return httptest.NewRequest(http.MethodPost, limits.Path, strings.NewReader(body))
}

func get() *http.Request { return httptest.NewRequest(http.MethodGet, limits.Path, nil) }

// jsonEqual fails t unless got and want hold the same JSON value.
func jsonEqual(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("body %q is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %q: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("body = %s\nwant   %s", got, want)
	}
}

// checkError checks that body is exactly {"error": msg}, where a want
// starting with "~" only has to be contained in msg.
func checkError(t *testing.T, body []byte, want string) {
	t.Helper()
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("body %q is not JSON: %v", body, err)
	}
	msg, ok := got["error"].(string)
	if !ok || len(got) != 1 {
		t.Fatalf(`body = %s, want {"error": "..."}`, body)
	}
	if part, ok := strings.CutPrefix(want, "~"); ok {
		if !strings.Contains(msg, part) {
			t.Errorf("error = %q, want it to contain %q", msg, part)
		}
	} else if msg != want {
		t.Errorf("error = %q\nwant      %q", msg, want)
	}
}

// changeLog is the log line of a change from old to now on an engine
// without per-rank limits.
func changeLog(old, now limiter.Limits) logLine {
	v := func(n int) any {
		if n == 0 {
			return nil
		}
		return n
	}
	tokens := func(n int64) any {
		if n == 0 {
			return nil
		}
		return n
	}
	return logLine{msg: "admission limits changed", kv: map[string]any{
		"old_engine_request_limit": v(old.Slots), "new_engine_request_limit": v(now.Slots),
		"old_engine_request_waiting_limit": v(old.WaitingLimit), "new_engine_request_waiting_limit": v(now.WaitingLimit),
		"old_request_queue_limit": old.QueueLen, "new_request_queue_limit": now.QueueLen,
		"old_engine_prefill_token_limit": tokens(old.PrefillTokenLimit), "new_engine_prefill_token_limit": tokens(now.PrefillTokenLimit),
		"old_request_queue_token_limit": tokens(old.QueueTokenLimit), "new_request_queue_token_limit": tokens(now.QueueTokenLimit),
		"per_rank": false,
	}}
}
