package proxy_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/load/inflight"
	"github.com/slotgate/slotgate/proxy"
)

// fakeClassifier records what it saw and does what the test says.
type fakeClassifier struct {
	classify func(ctx context.Context, r *admission.Request) error

	mu     sync.Mutex
	seen   []*admission.Request
	events map[string][]string // by request id: kind[/reason]
}

func newFakeClassifier(classify func(context.Context, *admission.Request) error) *fakeClassifier {
	return &fakeClassifier{classify: classify, events: map[string][]string{}}
}

func (f *fakeClassifier) Classify(ctx context.Context, r *admission.Request) error {
	f.mu.Lock()
	f.seen = append(f.seen, r)
	f.mu.Unlock()
	if f.classify == nil {
		return nil
	}
	return f.classify(ctx, r)
}

func (f *fakeClassifier) OnEvent(e admission.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := e.Kind.String()
	if e.Reason != admission.NotAborted {
		s += "/" + e.Reason.String()
	}
	f.events[e.Request.ID()] = append(f.events[e.Request.ID()], s)
}

func (f *fakeClassifier) eventsOf(id string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.events[id]...)
}

func admissionHarness(t *testing.T, eng http.Handler, f *fakeClassifier, limits limiter.Options) *harness {
	t.Helper()
	if limits.Classes == nil {
		limits.Classes = []limiter.Class{{Name: "interactive", Quantum: 1}, {Name: "batch", Quantum: 1}}
	}
	return newHarness(t, harnessConfig{engine: eng, limits: limits, gate: func(o *gate.Options) {
		o.Policy = &gate.Policy{Classifier: f, Classes: []string{"interactive", "batch"}, DefaultClass: "batch",
			SessionHeader: "x-session-id", CaptureHeaders: []string{"x-session-id", "x-priority"}}
	}})
}

func idRequest(t *testing.T, h *harness, id string, hdr map[string]string) *http.Request {
	t.Helper()
	req := newRequest(t, http.MethodPost, h.url("/v1/completions"), strings.NewReader(prompt))
	req.Header.Set("X-Request-Id", id)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req
}

func TestClassifierSeesInputsAndLifecycle(t *testing.T) {
	f := newFakeClassifier(func(_ context.Context, r *admission.Request) error {
		r.SetPolicyClass("interactive")
		return nil
	})
	h := admissionHarness(t, okEngine(t), f, limiter.Options{Slots: 1, QueueLen: 4})
	res := h.do(idRequest(t, h, "r1", map[string]string{"X-Session-Id": "s1", "X-Priority": "high", "X-Other": "no"}))
	if res.status != http.StatusOK {
		t.Fatalf("status %d %v", res.status, res.err)
	}
	r := f.seen[0]
	if r.ID() != "r1" || r.Session() != "s1" || r.PolicyClass() != "interactive" {
		t.Errorf("request: id %q session %q class %q", r.ID(), r.Session(), r.PolicyClass())
	}
	if v, _ := r.Header("x-priority"); v != "high" {
		t.Errorf("captured x-priority = %q", v)
	}
	if _, ok := r.Header("x-other"); ok {
		t.Error("an uncaptured header reached the classifier")
	}
	if n, ok := r.InputTokens(); !ok || n != len(prompt)/4 {
		t.Errorf("input tokens %d, %v; want %d from the declared length", n, ok, len(prompt)/4)
	}
	waitFor(t, "the last event", func() bool { return len(f.eventsOf("r1")) == 3 })
	if got := f.eventsOf("r1"); strings.Join(got, ",") != "sent,responding,completed" {
		t.Errorf("events %v, want sent, responding, completed", got)
	}
	if got := h.waitDone(1).done; got[string(gate.AdmittedDirect)] != 1 {
		t.Errorf("outcomes %v", got)
	}
}

func TestClassifierRejections(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		status  int
		reason  string
		message string
		outcome gate.Outcome
	}{
		{"capacity", admission.Reject(admission.CapacityExhausted, "budget spent"), 529, "policy", "budget spent", gate.RejectedPolicy},
		{"rate limited", admission.Reject(admission.RateLimited, "slow down"), 429, "rate_limited", "slow down", gate.RejectedRateLimited},
		{"plain error", context.DeadlineExceeded, 529, "policy", gate.MessagePolicy, gate.RejectedPolicy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeClassifier(func(context.Context, *admission.Request) error { return tc.err })
			h := admissionHarness(t, okEngine(t), f, limiter.Options{Slots: 1, QueueLen: 4})
			res := h.do(idRequest(t, h, "r", nil))
			if res.status != tc.status || res.header.Get(proxy.ReasonHeader) != tc.reason || !strings.Contains(res.body, tc.message) {
				t.Errorf("answer %d %q %q", res.status, res.header.Get(proxy.ReasonHeader), res.body)
			}
			h.waitOutcome(tc.outcome)
			if n := h.engine.count("/v1/completions"); n != 0 {
				t.Errorf("engine saw %d", n)
			}
			if got := f.eventsOf("r"); len(got) != 0 {
				t.Errorf("events %v for a request the classifier refused, want none", got)
			}
		})
	}
}

// TestAbortedAfterClassification: a request admitted by its classifier
// but then refused, or whose client leaves while queued, gets one Aborted
// event with the reason.
func TestAbortedAfterClassification(t *testing.T) {
	g := newHeldEngine()
	f := newFakeClassifier(nil)
	h := admissionHarness(t, g, f, limiter.Options{Slots: 1, QueueLen: 2})
	holder := h.goDo(idRequest(t, h, "holder", nil))
	receive(t, "holder at the engine", g.entered)
	ctx, cancel := context.WithCancel(context.Background())
	leaving := h.goDo(idRequest(t, h, "leaving", nil).WithContext(ctx))
	h.waitStats("queued", func(s limiter.Stats) bool { return s.Waiting == 1 })
	_ = h.goDo(idRequest(t, h, "second", nil))
	h.waitStats("queue full", func(s limiter.Stats) bool { return s.Waiting == 2 })
	if res := h.do(idRequest(t, h, "refused", nil)); res.status != 529 {
		t.Errorf("queue full: %d", res.status)
	}
	cancel()
	<-leaving
	waitFor(t, "events", func() bool { return len(f.eventsOf("refused")) == 1 && len(f.eventsOf("leaving")) == 1 })
	if got := f.eventsOf("refused"); got[0] != "aborted/rejected" {
		t.Errorf("refused: %v", got)
	}
	if got := f.eventsOf("leaving"); got[0] != "aborted/cancelled" {
		t.Errorf("leaving: %v", got)
	}
	g.release()
	<-holder
}

// TestDeferringClassifierAndDepartingClient: a classifier that defers
// sees its context end when the client leaves; the request never reaches
// the queue and gets no event.
func TestDeferringClassifierAndDepartingClient(t *testing.T) {
	deferring := make(chan struct{})
	f := newFakeClassifier(func(ctx context.Context, _ *admission.Request) error {
		close(deferring)
		<-ctx.Done()
		return ctx.Err()
	})
	h := admissionHarness(t, okEngine(t), f, limiter.Options{Slots: 1, QueueLen: 2})
	ctx, cancel := context.WithCancel(context.Background())
	done := h.goDo(idRequest(t, h, "d", nil).WithContext(ctx))
	receive(t, "classifier deferring", deferring)
	cancel()
	<-done
	h.waitOutcome(gate.CancelledQueued)
	if got := f.eventsOf("d"); len(got) != 0 {
		t.Errorf("events %v, want none", got)
	}
}

// TestUnknownClassIsRefused: a classifier choosing a class the
// configuration lacks gets its request refused, with its lifecycle ended.
func TestUnknownClassIsRefused(t *testing.T) {
	f := newFakeClassifier(func(_ context.Context, r *admission.Request) error {
		r.SetPolicyClass("platinum")
		return nil
	})
	h := admissionHarness(t, okEngine(t), f, limiter.Options{Slots: 1, QueueLen: 2})
	if res := h.do(idRequest(t, h, "u", nil)); res.status != 529 || res.header.Get(proxy.ReasonHeader) != "policy" {
		t.Errorf("answer %d %q", res.status, res.header.Get(proxy.ReasonHeader))
	}
	waitFor(t, "the event", func() bool { return len(f.eventsOf("u")) == 1 })
	if got := f.eventsOf("u"); got[0] != "aborted/rejected" {
		t.Errorf("events %v", got)
	}
}

// TestDueAtBoundsTheQueueWait: the classifier's deadline ends the queue
// wait with the queue-timeout answer.
func TestDueAtBoundsTheQueueWait(t *testing.T) {
	g := newHeldEngine()
	f := newFakeClassifier(func(_ context.Context, r *admission.Request) error {
		if r.ID() != "holder" {
			r.SetDueAt(time.Now().Add(50 * time.Millisecond))
		}
		return nil
	})
	h := admissionHarness(t, g, f, limiter.Options{Slots: 1, QueueLen: 2})
	holder := h.goDo(idRequest(t, h, "holder", nil))
	receive(t, "holder at the engine", g.entered)
	res := h.do(idRequest(t, h, "late", nil))
	if res.status != 529 || res.header.Get(proxy.ReasonHeader) != "queue_timeout" {
		t.Errorf("answer %d %q, want the queue-timeout answer", res.status, res.header.Get(proxy.ReasonHeader))
	}
	h.waitOutcome(gate.RejectedQueueTimeout)
	waitFor(t, "its event", func() bool { return len(f.eventsOf("late")) == 1 })
	if got := f.eventsOf("late"); got[0] != "aborted/rejected" {
		t.Errorf("events %v, want aborted/rejected", got)
	}
	g.release()
	<-holder
}

// TestClassesRouteToTheirQueues: the class a classifier chooses is the
// limiter queue the request waits in, and its metrics label.
func TestClassesRouteToTheirQueues(t *testing.T) {
	g := newHeldEngine()
	f := newFakeClassifier(func(_ context.Context, r *admission.Request) error {
		if p, _ := r.Header("x-priority"); p == "interactive" {
			r.SetPolicyClass("interactive")
		}
		return nil
	})
	h := admissionHarness(t, g, f, limiter.Options{Slots: 1, QueueLen: 4})
	holder := h.goDo(idRequest(t, h, "holder", nil))
	receive(t, "holder at the engine", g.entered)
	_ = h.goDo(idRequest(t, h, "i", map[string]string{"X-Priority": "interactive"}))
	_ = h.goDo(idRequest(t, h, "b", nil))
	s := h.waitStats("both queued", func(s limiter.Stats) bool { return s.Waiting == 2 })
	if len(s.Classes) != 2 || s.Classes[0].Waiting != 1 || s.Classes[1].Waiting != 1 {
		t.Errorf("class stats %+v, want one waiter in each", s.Classes)
	}
	g.release()
	<-holder
	h.waitDone(3)
	for _, key := range []string{"admitted_queued/interactive", "admitted_queued/batch", "admitted_direct/batch"} {
		if n := h.obs.classCount(key); n != 1 {
			t.Errorf("%s = %d, want 1", key, n)
		}
	}
}

// panicky panics where the test says.
type panicky struct {
	fakeClassifier
	inClassify, onEvent bool
}

func (p *panicky) Classify(ctx context.Context, r *admission.Request) error {
	if p.inClassify {
		panic("classify broke")
	}
	return p.fakeClassifier.Classify(ctx, r)
}

func (p *panicky) OnEvent(e admission.Event) {
	if p.onEvent {
		panic("event broke")
	}
	p.fakeClassifier.OnEvent(e)
}

// TestClassifierPanicsAreContained: a classifier that panics in Classify
// gets its request refused by policy; one that panics on an event costs
// neither the engine's answer nor the request's metrics.
func TestClassifierPanicsAreContained(t *testing.T) {
	for name, c := range map[string]*panicky{
		"classify": {fakeClassifier: *newFakeClassifier(nil), inClassify: true},
		"event":    {fakeClassifier: *newFakeClassifier(nil), onEvent: true},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, harnessConfig{engine: okEngine(t), limits: limiter.Options{Slots: 1, QueueLen: 2},
				gate: func(o *gate.Options) {
					o.Policy = &gate.Policy{Classifier: c, Classes: []string{"default"}, DefaultClass: "default"}
				}})
			res := h.do(idRequest(t, h, "p", nil))
			want, outcome := http.StatusOK, gate.AdmittedDirect
			if c.inClassify {
				want, outcome = 529, gate.RejectedPolicy
			}
			if res.err != nil || res.status != want {
				t.Fatalf("answer %d %v, want %d", res.status, res.err, want)
			}
			h.waitOutcome(outcome)
			if lines := h.accessLines(); len(lines) != 1 {
				t.Errorf("%d access lines, want 1", len(lines))
			}
		})
	}
}

// TestAdmissionClassesMustMatchTheQueues: a proxy whose classes are not
// the limiter's queues is refused at construction, not at the first
// request.
func TestAdmissionClassesMustMatchTheQueues(t *testing.T) {
	lim, err := limiter.New(limiter.Options{Slots: 1, QueueLen: 2,
		Classes: []limiter.Class{{Name: "a", Quantum: 1}, {Name: "b", Quantum: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, classes := range [][]string{{"b", "a"}, {"a"}, {"a", "b", "c"}} {
		_, err := gate.New(gate.Options{Limiter: lim,
			Policy: &gate.Policy{Classifier: admission.PassThrough{}, Classes: classes, DefaultClass: classes[0]}})
		if err == nil || !strings.Contains(err.Error(), "limiter's queues") {
			t.Errorf("classes %q: New = %v, want the mismatch refused", classes, err)
		}
	}
	if _, err := gate.New(gate.Options{Limiter: limiter.NewUnlimited(),
		Policy: &gate.Policy{Classifier: admission.PassThrough{}, Classes: []string{"x", "y"}, DefaultClass: "x"}}); err != nil {
		t.Errorf("an unlimited limiter has no queues to match: %v", err)
	}
}

// TestCompletedCarriesContextTokens: with token counting on, Completed
// has the prompt plus the generated tokens.
func TestCompletedCarriesContextTokens(t *testing.T) {
	f := newFakeClassifier(nil)
	var got atomic.Int64
	rec := &eventTokens{fakeClassifier: f, tokens: &got}
	eng := newStreamEngine(20)
	close(eng.first)
	close(eng.rest)
	h := newHarness(t, harnessConfig{engine: eng, limits: limiter.Options{Slots: 1, QueueLen: 2},
		gate: func(o *gate.Options) {
			o.Flights = inflight.New(nil)
			o.Policy = &gate.Policy{Classifier: rec, Classes: []string{"default"}, DefaultClass: "default"}
		}})
	if res := h.do(idRequest(t, h, "c", nil)); res.status != http.StatusOK {
		t.Fatalf("status %d", res.status)
	}
	waitFor(t, "Completed", func() bool { return got.Load() != 0 })
	if n := got.Load(); n != 100+20 { // 400 bytes of prompt, 20 tokens streamed
		t.Errorf("Completed.ContextTokens = %d, want 120", n)
	}
}

type eventTokens struct {
	*fakeClassifier
	tokens *atomic.Int64
}

func (e *eventTokens) OnEvent(ev admission.Event) {
	if ev.Kind == admission.Completed {
		e.tokens.Store(int64(ev.ContextTokens))
	}
}

// TestLifecycleUnderConcurrentCancel: many clients, leaving at random
// moments (while deferred, queued, at the engine, mid-stream) or not at
// all; every request the classifier admitted gets its events in order and
// exactly one final event.
func TestLifecycleUnderConcurrentCancel(t *testing.T) {
	f := newFakeClassifier(func(ctx context.Context, r *admission.Request) error {
		if strings.HasSuffix(r.ID(), "-defer") {
			select { // a short deferral, cut short when the client leaves
			case <-time.After(2 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	eng := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = readAll(r)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 5 {
			fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\"t%d\"}]}\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-time.After(time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	})
	h := admissionHarness(t, eng, f, limiter.Options{Slots: 2, QueueLen: 8})
	const n = 60
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("r%d", i)
			if i%3 == 0 {
				id += "-defer"
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*time.Millisecond)
			if i%7 == 0 {
				ctx, cancel = context.WithCancel(context.Background()) // never leaves
			}
			defer cancel()
			_ = h.do(idRequest(t, h, id, nil).WithContext(ctx))
		})
	}
	wg.Wait()
	// Every request that reached the proxy was classified, and ends with
	// one outcome; those whose client gave up before sending never came.
	waitFor(t, "every request that arrived finished", func() bool {
		f.mu.Lock()
		seen := len(f.seen)
		f.mu.Unlock()
		return seen > 0 && h.obs.total() == seen && h.lim.Stats().Holding == 0
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	finals := 0
	for _, r := range f.seen {
		evs := f.events[r.ID()]
		if len(evs) == 0 {
			continue // refused by the classifier's context: no events
		}
		last := evs[len(evs)-1]
		if !strings.HasPrefix(last, "completed") && !strings.HasPrefix(last, "aborted") {
			t.Errorf("%s: events %v end without a final event", r.ID(), evs)
		}
		finals++
		order := map[string]int{"sent": 1, "responding": 2}
		prev := 0
		for _, e := range evs[:len(evs)-1] {
			if order[e] <= prev {
				t.Errorf("%s: events %v out of order or repeated", r.ID(), evs)
			}
			prev = order[e]
		}
	}
	if finals == 0 {
		t.Error("no request got a final event")
	}
}

// TestDeferredRefusalDuringUpload: a classifier that defers (so the body
// read has begun) and then refuses, while the client is still uploading,
// gets the classifier's answer, not a cancelled or bad-request one.
func TestDeferredRefusalDuringUpload(t *testing.T) {
	for name, rej := range map[string]struct {
		err    error
		status int
		reason string
	}{
		"capacity":     {admission.Reject(admission.CapacityExhausted, "session busy"), 529, "policy"},
		"rate limited": {admission.Reject(admission.RateLimited, "slow down"), 429, "rate_limited"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeClassifier(func(context.Context, *admission.Request) error {
				time.Sleep(30 * time.Millisecond) // long enough for the body read to begin
				return rej.err
			})
			h := admissionHarness(t, okEngine(t), f, limiter.Options{Slots: 1, QueueLen: 2})
			conn, rd := h.rawConn()
			_, _ = conn.Write([]byte("POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"))
			resp, err := http.ReadResponse(rd, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != rej.status || resp.Header.Get(proxy.ReasonHeader) != rej.reason {
				t.Errorf("answer %d %q, want %d %q", resp.StatusCode, resp.Header.Get(proxy.ReasonHeader), rej.status, rej.reason)
			}
		})
	}
}
