package loadgen_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/loadgen"
)

// scripted is a Sender with no network: try k (from 0) of request i gets
// script(i, k), and a try whose Answer is blocked waits for its context to
// end. It records when each try came, so that a synctest bubble's fake
// clock measures the waits between them.
type scripted struct {
	script func(i int64, k int) loadgen.Answer

	mu    sync.Mutex
	tries map[int64][]time.Time
}

// blocked is the Answer that makes a scripted try wait for its context.
var blocked = loadgen.Answer{Status: "blocked"}

func (s *scripted) Target() string { return "scripted" }

func (s *scripted) Send(ctx context.Context, req loadgen.Request) loadgen.Answer {
	now := time.Now()
	s.mu.Lock()
	if s.tries == nil {
		s.tries = map[int64][]time.Time{}
	}
	k := len(s.tries[req.Index])
	s.tries[req.Index] = append(s.tries[req.Index], now)
	s.mu.Unlock()
	a := s.script(req.Index, k)
	if a.Status == blocked.Status {
		<-ctx.Done()
		return loadgen.Answer{Err: ctx.Err()}
	}
	if a.Success {
		a.Reply.Content(now)
		a.Reply.Usage(req.PromptTokens, req.MaxTokens)
	}
	return a
}

// offsets returns when request i's tries came, from start.
func (s *scripted) offsets(i int64, start time.Time) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var d []time.Duration
	for _, at := range s.tries[i] {
		d = append(d, at.Sub(start))
	}
	return d
}

// answers scripts every request alike: try k gets as[k], the last one
// again once they run out.
func answers(as ...loadgen.Answer) func(int64, int) loadgen.Answer {
	return func(_ int64, k int) loadgen.Answer { return as[min(k, len(as)-1)] }
}

var (
	ok200    = loadgen.Answer{Status: "200", Success: true}
	bad400   = loadgen.Answer{Status: "400"}
	busy503  = loadgen.Answer{Status: "503"}
	resetErr = loadgen.Answer{Err: fmt.Errorf("%w: connection reset", loadgen.ErrUnanswered)}
	otherErr = loadgen.Answer{Err: errors.New("tls: bad certificate")}
)

// over529 is a 529 with retryAfter as its Retry-After.
func over529(retryAfter string) loadgen.Answer {
	return loadgen.Answer{Status: "529", RetryAfter: retryAfter}
}

// scriptedOptions is one request of a closed loop, through s.
func scriptedOptions(s loadgen.Sender, retry int, deadline time.Duration) loadgen.Options {
	return loadgen.Options{
		Concurrency: 1, Requests: 1, DrainTimeout: time.Hour, Sender: s, Seed: 1,
		PromptTokens: loadgen.FixedDist(4), MaxTokens: loadgen.FixedDist(4),
		Retry: retry, Deadline: deadline,
	}
}

// TestRetrySchedule runs one request per case in a synctest bubble and
// checks when its tries came, by the fake clock, and how it was counted.
func TestRetrySchedule(t *testing.T) {
	span := func(lo, hi time.Duration) [2]time.Duration { return [2]time.Duration{lo, hi} }
	at := func(d time.Duration) [2]time.Duration { return span(d, d) }
	for _, tc := range []struct {
		name     string
		script   func(int64, int) loadgen.Answer
		retry    int
		deadline time.Duration
		tries    [][2]time.Duration // when each try came, bounds included
		status   string
		gaveUp   int64
	}{
		{"Retry-After seconds, twice, then served", answers(over529("2"), over529("2"), ok200), 3, 0,
			[][2]time.Duration{at(0), at(2 * time.Second), at(4 * time.Second)}, "200", 0},
		{"Retry-After as an HTTP date", func(_ int64, k int) loadgen.Answer {
			if k == 0 {
				return over529(time.Now().Add(3 * time.Second).Format(http.TimeFormat))
			}
			return ok200
		}, 3, 0, [][2]time.Duration{at(0), at(3 * time.Second)}, "200", 0},
		{"no Retry-After: jittered backoff", answers(busy503, busy503, ok200), 3, 0,
			[][2]time.Duration{at(0), span(375*time.Millisecond, 500*time.Millisecond),
				span(1125*time.Millisecond, 1500*time.Millisecond)}, "200", 0},
		{"every try refused: gives up", answers(over529("1")), 3, 0,
			[][2]time.Duration{at(0), at(time.Second), at(2 * time.Second)}, "529", 1},
		{"retry 1 never retries", answers(over529("1")), 1, 0, [][2]time.Duration{at(0)}, "529", 1},
		{"a bad request is not retried", answers(bad400, ok200), 3, 0, [][2]time.Duration{at(0)}, "400", 0},
		{"a connection failed before the answer is retried", answers(resetErr, ok200), 2, 0,
			[][2]time.Duration{at(0), span(375*time.Millisecond, 500*time.Millisecond)}, "200", 0},
		{"another error is not retried", answers(otherErr, ok200), 3, 0, [][2]time.Duration{at(0)}, "error", 0},
		{"Retry-After past the deadline: gives up at once", answers(over529("5"), ok200), 5, 3 * time.Second,
			[][2]time.Duration{at(0)}, "529", 1},
		{"the next wait would reach the deadline: gives up", answers(over529("2")), 5, 5 * time.Second,
			[][2]time.Duration{at(0), at(2 * time.Second), at(4 * time.Second)}, "529", 1},
		{"the deadline ends a try", answers(over529("1"), blocked), 3, 3 * time.Second,
			[][2]time.Duration{at(0), at(time.Second)}, loadgen.OutcomeDeadline, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &scripted{script: tc.script}
				start := time.Now()
				r := runLoad(t, t.Context(), scriptedOptions(s, tc.retry, tc.deadline))
				got := s.offsets(0, start)
				if len(got) != len(tc.tries) {
					t.Fatalf("tries at %v, want %d tries at %v", got, len(tc.tries), tc.tries)
				}
				for k, d := range got {
					if d < tc.tries[k][0] || d > tc.tries[k][1] {
						t.Errorf("try %d at %v, want from %v to %v (all at %v)", k, d, tc.tries[k][0], tc.tries[k][1], got)
					}
				}
				if want := map[string]int64{tc.status: 1}; !maps.Equal(r.ByStatus, want) {
					t.Errorf("by_status = %v, want %v", r.ByStatus, want)
				}
				if r.Tries != int64(len(tc.tries)) || r.GaveUp != tc.gaveUp {
					t.Errorf("tries %d, gave_up %d; want %d, %d", r.Tries, r.GaveUp, len(tc.tries), tc.gaveUp)
				}
				if d := time.Duration(r.Config.DeadlineSeconds * float64(time.Second)); r.Config.Retry != tc.retry || d != tc.deadline {
					t.Errorf("config retry %d, deadline %v; want %d, %v", r.Config.Retry, d, tc.retry, tc.deadline)
				}
			})
		})
	}
}

// TestRetryLatencyAndGoodput: a request served after its retries counts
// its latency from its first try, what its user waited, and the goodput
// counts it when it ended within the deadline.
func TestRetryLatencyAndGoodput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{script: answers(over529("2"), ok200)}
		r := runLoad(t, t.Context(), scriptedOptions(s, 2, 10*time.Second))
		if r.E2E.Count != 1 || r.E2E.Max != 2 || r.TTFT.Max != 2 {
			t.Errorf("e2e %+v, ttft %+v; want one sample of 2 s each", r.E2E, r.TTFT)
		}
		if r.DurationSeconds != 2 || r.GoodputPerSecond != 0.5 || r.RequestsPerSecond != 0.5 {
			t.Errorf("duration %g s, goodput %g/s, requests %g/s; want 2, 0.5, 0.5",
				r.DurationSeconds, r.GoodputPerSecond, r.RequestsPerSecond)
		}
	})
}

// TestRetryClosedLoopWaits: a closed loop's worker waits through its
// request's backoff before it sends its next request.
func TestRetryClosedLoopWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{script: func(i int64, k int) loadgen.Answer {
			if i == 0 && k == 0 {
				return over529("3")
			}
			return ok200
		}}
		o := scriptedOptions(s, 2, 0)
		o.Requests = 2
		start := time.Now()
		r := runLoad(t, t.Context(), o)
		if got := s.offsets(1, start); len(got) != 1 || got[0] != 3*time.Second {
			t.Errorf("request 1 sent at %v, want at 3s: after request 0's wait and retry", got)
		}
		if r.OK != 2 || r.Tries != 3 || r.Retries != 1 || r.OKFirstTry != 1 {
			t.Errorf("ok %d, tries %d, retries %d, ok at the first try %d; want 2, 3, 1, 1", r.OK, r.Tries, r.Retries, r.OKFirstTry)
		}
	})
}

// TestRetryOpenLoopOutstanding: in the open loop a request waiting to
// retry is still outstanding: with room for one, the arrivals during its
// wait are dropped.
func TestRetryOpenLoopOutstanding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{script: func(i int64, k int) loadgen.Answer {
			if i == 0 && k == 0 {
				return over529("20")
			}
			return ok200
		}}
		o := scriptedOptions(s, 2, 0)
		o.Mode, o.Concurrency, o.Rate, o.MaxOutstanding, o.Requests = loadgen.Open, 0, 10, 1, 10
		r := runLoad(t, t.Context(), o)
		if r.Sent != 1 || r.Dropped != 9 || r.OK != 1 || r.Tries != 2 {
			t.Errorf("sent %d, dropped %d, ok %d, tries %d; want 1, 9, 1, 2", r.Sent, r.Dropped, r.OK, r.Tries)
		}
	})
}

// TestRetryCancelledWhileWaiting: the drain timeout ends a request
// waiting to retry, as one in flight: "cancelled".
func TestRetryCancelledWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{script: answers(over529("30"), ok200)}
		o := scriptedOptions(s, 2, 0)
		o.DrainTimeout = time.Second
		start := time.Now()
		r := runLoad(t, t.Context(), o)
		if want := map[string]int64{loadgen.OutcomeCancelled: 1}; !maps.Equal(r.ByStatus, want) || r.GaveUp != 0 {
			t.Errorf("by_status = %v, gave_up %d; want %v, 0", r.ByStatus, r.GaveUp, want)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("the run took %v, want the drain timeout, 1s", d)
		}
	})
}

// TestRetryHTTP runs the default HTTP sender against a real server on
// 127.0.0.1 that refuses with 529 and a Retry-After (a fraction of a
// second, which the SDKs accept, to keep the test short), or answers
// slower than the deadline.
func TestRetryHTTP(t *testing.T) {
	for _, tc := range []struct {
		name     string
		engine   *engine
		requests int64
		retry    int
		deadline time.Duration
		want     map[string]int64
		tries    int64
		gaveUp   int64
		timedOut int64
	}{
		{"529 with Retry-After twice, then 200",
			&engine{status: func(n int64) int { return map[bool]int{true: 529, false: 200}[n < 2] }, retryAfter: "0.01"},
			1, 3, 0, map[string]int64{"200": 1}, 3, 0, 0},
		{"529 always: gives up",
			&engine{status: func(int64) int { return 529 }, retryAfter: "0.01"},
			4, 3, 0, map[string]int64{"529": 4}, 12, 4, 0},
		{"slower than the deadline: timed out",
			&engine{block: true},
			2, 3, 50 * time.Millisecond, map[string]int64{loadgen.OutcomeDeadline: 2}, 2, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			srv := tc.engine.start(t)
			o := options(srv.URL)
			o.Concurrency, o.Requests, o.Retry, o.Deadline = 1, tc.requests, tc.retry, tc.deadline
			r := runLoad(t, t.Context(), o)
			if !maps.Equal(r.ByStatus, tc.want) {
				t.Errorf("by_status = %v, want %v", r.ByStatus, tc.want)
			}
			if r.Tries != tc.tries || r.GaveUp != tc.gaveUp || r.TimedOut != tc.timedOut {
				t.Errorf("tries %d, gave_up %d, timed_out %d; want %d, %d, %d",
					r.Tries, r.GaveUp, r.TimedOut, tc.tries, tc.gaveUp, tc.timedOut)
			}
			if n := tc.engine.n.Load(); n != tc.tries {
				t.Errorf("the server got %d requests, want %d", n, tc.tries)
			}
			if r.OK == 0 && r.GoodputPerSecond != 0 {
				t.Errorf("goodput %g/s with nothing served", r.GoodputPerSecond)
			}
		})
	}
}

// TestRetryHTTPConnectionClosed: a server that closes every connection
// before answering gets the request again; the outcome of the last try is
// "error", and the request gave up.
func TestRetryHTTPConnectionClosed(t *testing.T) {
	checkLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted sync.WaitGroup
	accepted.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	})
	t.Cleanup(func() { _ = ln.Close(); accepted.Wait() })
	o := options("http://" + ln.Addr().String())
	o.Concurrency, o.Requests, o.Retry = 1, 1, 2
	r := runLoad(t, t.Context(), o)
	if want := map[string]int64{loadgen.OutcomeError: 1}; !maps.Equal(r.ByStatus, want) || r.Tries != 2 || r.GaveUp != 1 {
		t.Errorf("by_status %v, tries %d, gave_up %d; want %v, 2, 1", r.ByStatus, r.Tries, r.GaveUp, want)
	}
}
