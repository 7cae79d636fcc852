package proxy

import (
	"net/http"
	"testing"

	"github.com/slotgate/slotgate/gate"
)

// TestRefusalAnswers: each refusal outcome a parked or waiting request
// can get is answered with its own status; engine_error, which the gate
// gives a parked request whose resumption panicked, is the proxy's 502,
// not the 400 of a bad request.
func TestRefusalAnswers(t *testing.T) {
	a := newAnswers(529, 1, 1<<20)
	tests := []struct {
		outcome gate.Outcome
		status  int
		reason  string
	}{
		{gate.RejectedCapacity, 529, "capacity"},
		{gate.RejectedQueueExpired, 529, "queue_timeout"},
		{gate.RejectedTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
		{gate.EngineError, http.StatusBadGateway, "engine_error"},
		{gate.RejectedBadRequest, http.StatusBadRequest, "bad_request"},
	}
	for _, tc := range tests {
		got := a.of(tc.outcome, "")
		if got.status != tc.status || got.reason != tc.reason {
			t.Errorf("%s: answered %d %q, want %d %q", tc.outcome, got.status, got.reason, tc.status, tc.reason)
		}
	}
}
