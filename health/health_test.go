package health_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/slotgate/slotgate/health"
	"github.com/slotgate/slotgate/internal/bounded"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const interval = 10 * time.Millisecond

// engine is a fake engine health endpoint over real loopback HTTP. Its
// handler counts a poll before it reads the status, so a poll counted after
// a status change is answered with the new status.
type engine struct {
	srv    *httptest.Server
	status atomic.Int64
	polls  atomic.Int64
}

func newEngine(t *testing.T, status int) *engine {
	t.Helper()
	e := &engine{}
	e.status.Store(int64(status))
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.polls.Add(1)
		if r.Method != http.MethodGet || r.URL.Path != "/health" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusTeapot)
			return
		}
		w.WriteHeader(int(e.status.Load()))
		_, _ = io.WriteString(w, `{"status":"whatever"}`)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *engine) url() string { return e.srv.URL + "/health" }

// run starts p.Run and returns a function that stops it and checks that it
// returned nil; the stop also runs at cleanup.
func run(t *testing.T, p *health.Prober) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	stopped := false
	stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v after its context ended, want nil", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return within 5s of its context ending")
		}
	}
	t.Cleanup(stop)
	return stop
}

// eventually polls cond every 5ms for up to 5s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	bounded.Wait{Within: 5 * time.Second, Every: 5 * time.Millisecond}.True(t, what, cond)
}

func newProber(t *testing.T, opts health.Options) *health.Prober {
	t.Helper()
	p, err := health.New(opts)
	if err != nil {
		t.Fatalf("health.New: %v", err)
	}
	return p
}

func TestNewRequiresURL(t *testing.T) {
	if _, err := health.New(health.Options{}); err == nil {
		t.Error("New without a URL succeeded, want an error")
	}
}

func TestNotReadyBeforeFirstPoll(t *testing.T) {
	e := newEngine(t, http.StatusOK)
	p := newProber(t, health.Options{URL: e.url(), Interval: interval})
	if err := p.Ready(); err == nil {
		t.Error("Ready before any poll returned nil, want an error")
	}
	if n := e.polls.Load(); n != 0 {
		t.Errorf("New polled the engine %d times, want 0: it starts nothing", n)
	}
}

func TestReadyAfterOK(t *testing.T) {
	e := newEngine(t, http.StatusOK)
	p := newProber(t, health.Options{URL: e.url(), Interval: interval})
	run(t, p)
	eventually(t, "Ready to return nil", func() bool { return p.Ready() == nil })
}

func TestNotReadyOnErrorStatus(t *testing.T) {
	e := newEngine(t, http.StatusServiceUnavailable)
	p := newProber(t, health.Options{URL: e.url(), Interval: interval})
	run(t, p)
	// Two polls served means the first one has been recorded.
	eventually(t, "two polls", func() bool { return e.polls.Load() >= 2 })
	err := p.Ready()
	if err == nil {
		t.Fatal("Ready = nil with an engine answering 503")
	}
	if !strings.Contains(err.Error(), "503") {
		t.Errorf("Ready = %q, want it to mention status 503", err)
	}
}

func TestNotReadyWhenEngineUnreachable(t *testing.T) {
	e := newEngine(t, http.StatusOK)
	url := e.url()
	e.srv.Close() // nothing listens there any more
	p := newProber(t, health.Options{URL: url, Interval: interval})
	stop := run(t, p)
	// A refused connection fails fast; give Run a few intervals to record one.
	eventually(t, "a recorded poll", func() bool {
		err := p.Ready()
		return err != nil && !strings.Contains(err.Error(), "not polled")
	})
	stop()
	if err := p.Ready(); err == nil {
		t.Error("Ready = nil with an unreachable engine")
	}
}

func TestTurnsUnreadyOnNextPoll(t *testing.T) {
	e := newEngine(t, http.StatusOK)
	p := newProber(t, health.Options{URL: e.url(), Interval: interval})
	run(t, p)
	eventually(t, "Ready to return nil", func() bool { return p.Ready() == nil })

	e.status.Store(http.StatusServiceUnavailable)
	switched := e.polls.Load()
	// Poll switched+1 was counted after the switch, so it got 503; once poll
	// switched+2 has arrived, poll switched+1 has been recorded.
	eventually(t, "two polls after the switch", func() bool { return e.polls.Load() >= switched+2 })
	err := p.Ready()
	if err == nil {
		t.Fatal("Ready = nil after the engine answered 503")
	}
	if !strings.Contains(err.Error(), "status 503") {
		t.Errorf("Ready = %q, want it to mention status 503", err)
	}

	// And back.
	e.status.Store(http.StatusOK)
	switched = e.polls.Load()
	eventually(t, "two polls after the switch back", func() bool { return e.polls.Load() >= switched+2 })
	if err := p.Ready(); err != nil {
		t.Errorf("Ready = %v after the engine answered 200 again", err)
	}
}

func TestRunReturnsNilWhenContextEnds(t *testing.T) {
	e := newEngine(t, http.StatusOK)
	p := newProber(t, health.Options{URL: e.url(), Interval: interval})
	stop := run(t, p)
	eventually(t, "a few polls", func() bool { return e.polls.Load() >= 3 })
	stop() // fails the test unless Run returns nil promptly
	// goleak in TestMain checks that nothing Run started outlives it.
}

// TestRunLeavesNothingBehind stops Run while the engine is still up: the
// prober's own keep-alive connection must not outlive Run, or its two
// goroutines (and the engine's side of it) would stay until the engine
// closes it, which with no idle timeout is never.
func TestRunLeavesNothingBehind(t *testing.T) {
	e := newEngine(t, http.StatusOK)
	before := goleak.IgnoreCurrent()
	p := newProber(t, health.Options{URL: e.url(), Interval: interval})
	stop := run(t, p)
	eventually(t, "a few polls", func() bool { return e.polls.Load() >= 3 })
	stop()
	goleak.VerifyNone(t, before)
}

func TestRunWithContextAlreadyEnded(t *testing.T) {
	e := newEngine(t, http.StatusOK)
	p := newProber(t, health.Options{URL: e.url(), Interval: interval})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run with an ended context did not return")
	}
}

func TestUsesGivenClient(t *testing.T) {
	e := newEngine(t, http.StatusOK)
	var used atomic.Int64
	base := e.srv.Client().Transport
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		used.Add(1)
		return base.RoundTrip(r)
	})}
	p := newProber(t, health.Options{URL: e.url(), Interval: interval, Client: client})
	run(t, p)
	eventually(t, "Ready to return nil", func() bool { return p.Ready() == nil })
	if used.Load() == 0 {
		t.Error("the prober did not poll through Options.Client")
	}
}

// Fake-time tests. Inside a synctest bubble there is no real network: the
// client's transport is a function.

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// fakeEngine answers polls in memory. While hung, a poll blocks until its
// context ends, as with an engine that accepts connections but never
// answers.
type fakeEngine struct {
	status atomic.Int64
	hung   atomic.Bool
	polls  atomic.Int64
}

func newFakeEngine(status int) *fakeEngine {
	f := &fakeEngine{}
	f.status.Store(int64(status))
	return f
}

func (f *fakeEngine) client() *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		f.polls.Add(1)
		if f.hung.Load() {
			<-r.Context().Done()
			return nil, r.Context().Err()
		}
		return &http.Response{
			StatusCode: int(f.status.Load()),
			Header:     http.Header{},
			Body:       io.NopCloser(strings.NewReader("{}")),
			Request:    r,
		}, nil
	})}
}

// runInBubble starts p.Run in the current bubble and returns a stop
// function that ends it and checks it returned nil.
func runInBubble(t *testing.T, p *health.Prober) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	}
}

func TestStaleAfterThreeIntervals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = time.Second
		f := newFakeEngine(http.StatusOK)
		p := newProber(t, health.Options{
			URL:      "http://engine.test/health",
			Interval: every,
			Timeout:  time.Hour, // a hung poll outlives the staleness limit
			Client:   f.client(),
		})
		stop := runInBubble(t, p)

		synctest.Wait() // the first poll, at once
		if err := p.Ready(); err != nil {
			t.Fatalf("Ready after a 200 = %v, want nil", err)
		}

		f.hung.Store(true)
		// The next poll, at 1s, hangs. At 2.5s the last answer is 2.5
		// intervals old: still ready.
		time.Sleep(2*every + every/2)
		synctest.Wait()
		if got := f.polls.Load(); got != 2 {
			t.Errorf("%d polls by 2.5s with the second one hung, want 2 (one at a time)", got)
		}
		if err := p.Ready(); err != nil {
			t.Errorf("Ready 2.5 intervals after the last 200 = %v, want nil", err)
		}

		// At 3.5s it is older than three intervals.
		time.Sleep(every)
		synctest.Wait()
		err := p.Ready()
		if err == nil {
			t.Fatal("Ready 3.5 intervals after the last 200 with the engine hung = nil, want an error")
		}
		if !strings.Contains(err.Error(), "ago") {
			t.Errorf("Ready = %q, want it to say how long ago the engine last answered", err)
		}

		stop()
	})
}

func TestOnly200IsReady(t *testing.T) {
	for _, status := range []int{
		http.StatusOK, http.StatusNoContent, http.StatusNotFound, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusServiceUnavailable,
	} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeEngine(status)
				p := newProber(t, health.Options{URL: "http://engine.test/health", Interval: time.Second, Client: f.client()})
				stop := runInBubble(t, p)
				synctest.Wait()
				err := p.Ready()
				switch {
				case status == http.StatusOK && err != nil:
					t.Errorf("Ready after a 200 = %v, want nil", err)
				case status != http.StatusOK && err == nil:
					t.Errorf("Ready after a %d = nil, want an error", status)
				case status != http.StatusOK && !strings.Contains(err.Error(), strconv.Itoa(status)):
					t.Errorf("Ready after a %d = %q, want it to mention the status", status, err)
				}
				stop()
			})
		})
	}
}

func TestHungPollTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = time.Second
		f := newFakeEngine(http.StatusOK)
		p := newProber(t, health.Options{URL: "http://engine.test/health", Interval: every, Client: f.client()})
		stop := runInBubble(t, p)
		synctest.Wait()
		if err := p.Ready(); err != nil {
			t.Fatalf("Ready after a 200 = %v, want nil", err)
		}
		f.hung.Store(true)
		// The poll at 1s is cut off by the default timeout (one interval)
		// at 2s and recorded as a failure.
		time.Sleep(2*every + every/2)
		synctest.Wait()
		err := p.Ready()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Ready after a hung poll = %v, want a context.DeadlineExceeded", err)
		}
		stop()
	})
}

func TestDefaultInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeEngine(http.StatusOK)
		p := newProber(t, health.Options{URL: "http://engine.test/health", Client: f.client()})
		stop := runInBubble(t, p)
		// Polls at 0s, 1s and 2s.
		time.Sleep(2*time.Second + 500*time.Millisecond)
		synctest.Wait()
		if got := f.polls.Load(); got != 3 {
			t.Errorf("%d polls in 2.5s with the default interval, want 3 (one per second, the first at once)", got)
		}
		stop()
	})
}

func TestStateChangesLoggedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = time.Second
		core, logs := observer.New(zapcore.DebugLevel)
		f := newFakeEngine(http.StatusServiceUnavailable)
		p := newProber(t, health.Options{
			URL:           "http://engine.test/health",
			Interval:      every,
			RetryInterval: every, // one poll per interval, failing or not
			Client:        f.client(),
			Logger:        zap.New(core),
		})
		stop := runInBubble(t, p)

		count := func(msg string) int { return logs.FilterMessage(msg).Len() }
		advance := func(polls int) {
			t.Helper()
			before := f.polls.Load()
			time.Sleep(time.Duration(polls) * every)
			synctest.Wait()
			if got := f.polls.Load() - before; got != int64(polls) {
				t.Fatalf("%d polls in %d intervals, want %d", got, polls, polls)
			}
		}

		synctest.Wait() // first poll: 503
		advance(4)      // four more failing polls
		if n := count("engine is not ready"); n != 1 {
			t.Errorf("%q logged %d times over 5 failing polls, want 1", "engine is not ready", n)
		}
		if n := count("engine is ready"); n != 0 {
			t.Errorf("%q logged %d times while failing", "engine is ready", n)
		}
		entry := logs.FilterMessage("engine is not ready").All()[0]
		if entry.Level != zapcore.WarnLevel {
			t.Errorf("not-ready logged at %v, want warn", entry.Level)
		}
		if got := entry.ContextMap()["url"]; got != "http://engine.test/health" {
			t.Errorf("not-ready log url = %v", got)
		}
		if got, _ := entry.ContextMap()["error"].(string); !strings.Contains(got, "503") {
			t.Errorf("not-ready log error = %q, want the status", got)
		}

		f.status.Store(http.StatusOK)
		advance(4)
		if n := count("engine is ready"); n != 1 {
			t.Errorf("%q logged %d times over 4 good polls, want 1", "engine is ready", n)
		}

		f.status.Store(http.StatusInternalServerError)
		advance(4)
		if n := count("engine is not ready"); n != 2 {
			t.Errorf("%q logged %d times after a second failure streak, want 2 in all", "engine is not ready", n)
		}
		if n := logs.Len(); n != 3 {
			t.Errorf("%d log entries for three state changes, want 3: %v", n, logs.All())
		}
		stop()
	})
}

// TestRetriesFasterWhileNotReady: with the default intervals, a failing
// engine is polled every 200 ms, so that readiness comes back within
// 200 ms of the engine; a ready one every second.
func TestRetriesFasterWhileNotReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeEngine(http.StatusServiceUnavailable)
		p := newProber(t, health.Options{URL: "http://engine.test/health", Client: f.client()})
		stop := runInBubble(t, p)
		// Failing: polls at 0, 0.2, ... 1.0s.
		time.Sleep(time.Second + 100*time.Millisecond)
		synctest.Wait()
		if got := f.polls.Load(); got != 6 {
			t.Errorf("%d polls in 1.1s while failing, want 6 (every 200ms)", got)
		}
		// Back at 1.1s: the poll at 1.2s sees it.
		f.status.Store(http.StatusOK)
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if err := p.Ready(); err != nil {
			t.Errorf("Ready 100ms after the engine came back, past a retry = %v, want nil", err)
		}
		// Ready: the next polls at 2.2s and 3.2s.
		before := f.polls.Load()
		time.Sleep(2*time.Second + 100*time.Millisecond) // to 3.3s
		synctest.Wait()
		if got := f.polls.Load() - before; got != 2 {
			t.Errorf("%d polls in 2.1s while ready, want 2 (every second)", got)
		}
		stop()
	})
}

func TestRetryIntervalCappedAtInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeEngine(http.StatusServiceUnavailable)
		p := newProber(t, health.Options{
			URL: "http://engine.test/health", Interval: time.Second, RetryInterval: time.Hour, Client: f.client(),
		})
		stop := runInBubble(t, p)
		time.Sleep(2*time.Second + 500*time.Millisecond)
		synctest.Wait()
		if got := f.polls.Load(); got != 3 {
			t.Errorf("%d polls in 2.5s with RetryInterval over Interval, want 3 (every Interval)", got)
		}
		stop()
	})
}
