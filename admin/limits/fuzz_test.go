package limits_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/slotgate/slotgate/admin/limits"
	"github.com/slotgate/slotgate/limiter"
)

// FuzzPost sends any body to POST /limits on a gate that is on and checks
// what holds for every body: the answer is 200, 400 or 422 in its JSON
// shape; a refusal changes nothing; and the limits in force stay valid,
// the token limits within 0 and MaxTokenLimit, and are what a 200 shows.
func FuzzPost(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"engine_request_limit":2}`, `{"engine_request_limit":null,"engine_request_waiting_limit":3}`,
		`{"engine_request_limit":null}`, `{"request_queue_limit":null}`, `{"request_queue_limit":-0}`,
		`{"engine_prefill_token_limit":4611686018427387904}`, `{"engine_prefill_token_limit":4611686018427387905}`,
		`{"request_queue_token_limit":null}`, `{"request_queue_token_limit":1.5}`, `{"request_queue_token_limit":"1"}`,
		`{"engine_prefill_token_limit":0,"request_queue_token_limit":-1}`, `{"a":1}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		g := newGate(t, tokens)
		w := serve(t, limits.NewHandler(limits.Options{Limits: g}), post(string(body)))
		got := g.Limits()
		switch w.Code {
		case http.StatusOK:
			jsonEqual(t, w.Body.String(), shape(got))
		case http.StatusBadRequest, http.StatusUnprocessableEntity:
			var e map[string]string
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || len(e) != 1 || e["error"] == "" {
				t.Errorf(`body = %s, want {"error": "..."}`, w.Body)
			}
			if got != tokens {
				t.Errorf("a refused POST changed the limits to %+v", got)
			}
		default:
			t.Fatalf("status = %d for %q; body %s", w.Code, body, w.Body)
		}
		if !valid(got) {
			t.Errorf("limits in force %+v are not valid after %q", got, body)
		}
	})
}

// valid reports whether l are limits the API may leave in force.
func valid(l limiter.Limits) bool {
	inTokens := func(n int64) bool { return n >= 0 && n <= limits.MaxTokenLimit }
	return l.Slots >= 0 && l.WaitingLimit >= 0 && (l.Slots > 0 || l.WaitingLimit > 0) &&
		l.Slots <= limits.MaxLimit && l.WaitingLimit <= limits.MaxLimit && l.QueueLen >= 0 && l.QueueLen <= limits.MaxLimit &&
		inTokens(l.PrefillTokenLimit) && inTokens(l.QueueTokenLimit)
}
