package router_test

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/examples/frontend/router"
	"github.com/slotgate/slotgate/load/report"
)

// A worker's 529 marks it for the cooldown, and the mark ends by itself
// once the cooldown has passed, with no load event in between: the
// worker's hub publishes nothing from the 529 to the end of the mark
// (Dynamo #14213: there, only a load event cleared a mark).
func TestMarkExpiresWithoutLoadEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		// Heartbeats every 10 s: none falls inside the 1 s cooldown.
		a := startWorker(t, n, "a", load{}, 10*time.Second)
		b := startWorker(t, n, "b", load{inFlight: 4}, 10*time.Second) // busier: a is preferred
		f := startFleet(t, n, router.Options{Cooldown: time.Second, Retries: 1}, a, b)
		published := a.published.Load() + b.published.Load()

		a.refusing.Store(true)
		if got := f.post(`{"prompt":"x"}`); got.status != 200 || got.body != "b" {
			t.Fatalf("first request: %+v, want a's 529 retried on b", got)
		}
		a.refusing.Store(false)
		st := f.router.Stats()
		if st.Absorbed529 != 1 || st.Client529 != 0 || !st.Workers[0].Marked {
			t.Fatalf("after a's 529: %+v, want one 529 absorbed and a marked", st)
		}

		time.Sleep(999 * time.Millisecond)
		if got := f.post(`{"prompt":"x"}`); got.body != "b" {
			t.Fatalf("within the cooldown: %+v, want b (a is marked, though less loaded)", got)
		}
		time.Sleep(time.Millisecond)
		if got := f.post(`{"prompt":"x"}`); got.body != "a" {
			t.Fatalf("after the cooldown: %+v, want a again", got)
		}
		if p := a.published.Load() + b.published.Load(); p != published {
			t.Errorf("the hubs published %d snapshots during the test, want none", p-published)
		}
		if st := f.router.Stats(); st.Workers[0].Marked {
			t.Errorf("a still marked after its cooldown: %+v", st.Workers[0])
		}
	})
}

// Selection: busy and marked workers are left out, the least loaded of
// the rest is picked, KV use breaks ties, and what is left when nothing is
// eligible is a 529 (workers known) or a 503 (none reachable).
func TestSelection(t *testing.T) {
	tests := []struct {
		name       string
		policy     router.Policy
		a, b       load
		aRefusing  bool
		want       string // the worker that answers, or the status
		exclusions int64
	}{
		{name: "busy left out", a: load{busy: true}, b: load{inFlight: 7}, want: "b", exclusions: 1},
		{name: "least loaded", a: load{inFlight: 6}, b: load{inFlight: 2}, want: "b"},
		{name: "least loaded, other way", a: load{inFlight: 1}, b: load{inFlight: 5}, want: "a"},
		{name: "KV breaks a tie", a: load{inFlight: 3, kv: 0.9}, b: load{inFlight: 3, kv: 0.1}, want: "b"},
		{name: "all busy", a: load{busy: true}, b: load{busy: true}, want: "529", exclusions: 2},
		{name: "round robin ignores busy", policy: router.PolicyRoundRobin, a: load{busy: true}, b: load{busy: true}, want: "a"},
		{name: "round robin passes a 529 on without retries", policy: router.PolicyRoundRobin, aRefusing: true, want: "worker 529"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := newPipeNet()
				a := startWorker(t, n, "a", tc.a, time.Second)
				b := startWorker(t, n, "b", tc.b, time.Second)
				a.refusing.Store(tc.aRefusing)
				f := startFleet(t, n, router.Options{Policy: tc.policy}, a, b)
				got := f.post(`{"prompt":"x"}`)
				switch tc.want {
				case "529":
					checkRefusal(t, got, router.StatusOverloaded)
				case "worker 529":
					if got.status != router.StatusOverloaded || a.refused.Load() != 1 {
						t.Errorf("answer %+v, a refused %d: want a's own 529, passed on", got, a.refused.Load())
					}
				default:
					if got.status != 200 || got.body != tc.want {
						t.Errorf("answer %+v, want 200 from %s", got, tc.want)
					}
				}
				if st := f.router.Stats(); st.Exclusions != tc.exclusions {
					t.Errorf("exclusions %d, want %d", st.Exclusions, tc.exclusions)
				}
			})
		})
	}
}

// With no worker, or none whose sidecar answers, the router says 503.
func TestUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		workers []router.Worker
	}{
		{name: "none registered"},
		{name: "none reachable", workers: []router.Worker{{Name: "gone", Proxy: "http://gone:80", Admin: "http://gone:90"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := newPipeNet()
				f := startFleet(t, n, router.Options{Workers: tc.workers})
				checkRefusal(t, f.post(`{}`), 503)
				if st := f.router.Stats(); st.Client503 != 1 || st.Client529 != 0 {
					t.Errorf("stats %+v, want one 503", st)
				}
			})
		})
	}
}

// A body too large to keep is streamed to its worker once and never
// retried: the worker's 529 reaches the client.
func TestLargeBodyNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		a := startWorker(t, n, "a", load{}, time.Second)
		b := startWorker(t, n, "b", load{inFlight: 4}, time.Second)
		a.refusing.Store(true)
		f := startFleet(t, n, router.Options{Retries: 2, MaxReplayBytes: 8}, a, b)
		if got := f.post(strings.Repeat("x", 9)); got.status != router.StatusOverloaded {
			t.Errorf("answer %+v, want a's 529", got)
		}
		if got := f.post(strings.Repeat("x", 8)); got.status != 200 || got.body != "b" {
			t.Errorf("a body within the limit: %+v, want retried on b", got)
		}
		if st := f.router.Stats(); st.Worker529 != 1 || st.Absorbed529 != 0 || st.Client529 != 1 {
			t.Errorf("stats %+v: want one worker 529, passed on, none absorbed", st)
		}
	})
}

// checkRefusal checks a refusal the router made itself: its status, its
// OpenAI-shaped body and, for a 529, its Retry-After.
func checkRefusal(t *testing.T, got answer, status int) {
	t.Helper()
	var body struct {
		Error struct {
			Message string `json:"message"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(got.body), &body); err != nil || got.status != status || body.Error.Code != status {
		t.Fatalf("answer %+v (%v), want %d with an OpenAI-shaped error", got, err, status)
	}
	if status == router.StatusOverloaded && (body.Error.Message != router.MessageOverloaded || got.retryAfter != "1") {
		t.Errorf("529 %+v: want %q and Retry-After 1", got, router.MessageOverloaded)
	}
}

// A worker that turns busy is left out from its next snapshot on, and
// taken again once it says it is idle; each turn to busy is one flip.
func TestBusyFlips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		a := startWorker(t, n, "a", load{}, time.Second)
		b := startWorker(t, n, "b", load{inFlight: 4}, time.Second)
		f := startFleet(t, n, router.Options{}, a, b)
		for i, step := range []struct {
			aBusy bool
			want  string
		}{{false, "a"}, {true, "b"}, {false, "a"}, {true, "b"}} {
			a.set(load{busy: step.aBusy})
			// The hub publishes at most once per report.MinInterval; the
			// bubble's clock passes it at once.
			time.Sleep(report.MinInterval)
			synctest.Wait()
			if got := f.post(`{}`); got.body != step.want {
				t.Fatalf("step %d (a busy %v): answer %+v, want %s", i, step.aBusy, got, step.want)
			}
		}
		st := f.router.Stats()
		if st.BusyFlips != 2 || st.Workers[0].BusyFlips != 2 || st.Workers[0].Excluded != 2 {
			t.Errorf("stats %+v: want a flipped to busy twice and left out twice", st)
		}
	})
}

// A worker's 529 with no other worker to retry on is not absorbed: the
// client gets the router's own 529, and the counts say so.
func TestRetryWithNowhereToGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		a := startWorker(t, n, "a", load{}, time.Second)
		b := startWorker(t, n, "b", load{busy: true}, time.Second)
		a.refusing.Store(true)
		f := startFleet(t, n, router.Options{Retries: 2}, a, b)
		checkRefusal(t, f.post(`{}`), router.StatusOverloaded)
		st := f.router.Stats()
		if st.Worker529 != 1 || st.Absorbed529 != 0 || st.Retries != 0 || st.Client529 != 1 {
			t.Errorf("stats %+v: want one worker 529, none absorbed, no retry, one 529 to the client", st)
		}
	})
}
