package builtin

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/slotgate/slotgate/admission"
)

// The client's answers of session-gate's rejections.
const (
	msgSessionBusy     = "Server overloaded: session busy"
	msgTooManySessions = "Server overloaded: too many active sessions"
	msgTooManyWaiting  = "Server overloaded: too many requests waiting for their sessions"
)

// Defaults and bounds of session-gate's optional parameters.
const (
	defaultSessionWaitMS = 30000
	maxSessionWaitMS     = 600000
	defaultMaxSessions   = 100000
	defaultMaxWaiting    = 64
)

type sessionGateParams struct {
	MaxActivePerSession *int64 `json:"max_active_per_session"`
	MaxWaitMS           *int64 `json:"max_wait_ms"`
	MaxSessions         *int64 `json:"max_sessions"`
	MaxWaiting          *int64 `json:"max_waiting"`
}

// sessionGateProvider validates max_active_per_session (required, at
// least 1), max_wait_ms (default 30000, 1..600000), max_sessions
// (default 100000, at least 1) and max_waiting (default 64, at least 1).
func sessionGateProvider(p admission.Parameters) (admission.Factory, error) {
	var params sessionGateParams
	if err := decode(SessionGate, p, &params); err != nil {
		return nil, err
	}
	ps := problems{typeName: SessionGate}
	limit := ps.intIn("max_active_per_session", params.MaxActivePerSession, true, 0, 1, noMax)
	waitMS := ps.intIn("max_wait_ms", params.MaxWaitMS, false, defaultSessionWaitMS, 1, maxSessionWaitMS)
	maxSessions := ps.intIn("max_sessions", params.MaxSessions, false, defaultMaxSessions, 1, noMax)
	maxWaiting := ps.intIn("max_waiting", params.MaxWaiting, false, defaultMaxWaiting, 1, noMax)
	if err := ps.err(); err != nil {
		return nil, err
	}
	return func(admission.Context) (admission.Classifier, error) {
		return &sessionGate{
			limit:       int(limit),
			wait:        time.Duration(waitMS) * time.Millisecond,
			maxSessions: int(maxSessions),
			maxWaiting:  int(maxWaiting),
			sessions:    make(map[string]*session),
			inFlight:    make(map[*admission.Request]*session),
		}, nil
	}, nil
}

// sessionGate bounds the requests in flight per session. All its state is
// under mu; it starts no goroutines, and a waiter's only resources are
// its list element and its timer, both gone when Classify returns.
//
// Invariant, per session: waiters is non-empty only while active ==
// limit. A request waits only when the session is full or others already
// wait (no barging), and a release hands its slot to the oldest waiter
// instead of decrementing active. So a waiter that leaves never needs to
// wake another: nothing it leaves behind is free.
type sessionGate struct {
	limit       int
	wait        time.Duration
	maxSessions int
	// maxWaiting bounds the waiters of all sessions together: a waiting
	// request holds a connection and, in slotgate, its buffered body,
	// outside the limiter's N+Q.
	maxWaiting int
	waiting    int // under mu

	mu sync.Mutex
	// sessions holds the sessions with a request in flight or waiting.
	sessions map[string]*session
	// inFlight holds the requests the gate admitted that have not yet
	// had their Completed or Aborted event, keyed by identity: request
	// ids may be empty or repeated.
	inFlight map[*admission.Request]*session
}

type session struct {
	id      string
	active  int       // requests of this session in flight
	waiters list.List // of *sessionWaiter, oldest first
}

type sessionWaiter struct {
	req *admission.Request
	// ready is closed, under mu, when the waiter is granted a slot: it is
	// then already counted in active and inFlight.
	ready chan struct{}
}

// Classify admits a request without a session at once. A request of a
// session with fewer than max_active_per_session requests in flight and
// nobody waiting is admitted at once; with max_sessions sessions already
// tracked, a request of a new session is rejected (CapacityExhausted).
// Otherwise it waits, behind the session's earlier waiters, until a
// request of the session completes or aborts (it is admitted, nil), its
// context ends (ctx.Err()), or max_wait_ms passes from the call
// (CapacityExhausted, "session busy"). A request that is not admitted
// holds nothing.
func (g *sessionGate) Classify(ctx context.Context, r *admission.Request) error {
	id := r.Session()
	if id == "" {
		return nil
	}
	timeout := time.Now().Add(g.wait)
	g.mu.Lock()
	s := g.sessions[id]
	if s == nil {
		if len(g.sessions) >= g.maxSessions {
			g.mu.Unlock()
			return admission.Reject(admission.CapacityExhausted, msgTooManySessions)
		}
		s = &session{id: id}
		g.sessions[id] = s
	}
	if s.active < g.limit && s.waiters.Len() == 0 {
		s.active++
		g.inFlight[r] = s
		g.mu.Unlock()
		return nil
	}
	if g.waiting >= g.maxWaiting {
		g.mu.Unlock()
		return admission.Reject(admission.CapacityExhausted, msgTooManyWaiting)
	}
	w := &sessionWaiter{req: r, ready: make(chan struct{})}
	elem := s.waiters.PushBack(w)
	g.waiting++
	g.mu.Unlock()
	return g.await(ctx, s, elem, w, time.Until(timeout))
}

// await blocks the waiter w, queued at elem of s, until it is granted a
// slot, its context ends or its budget passes.
func (g *sessionGate) await(ctx context.Context, s *session, elem *list.Element, w *sessionWaiter, budget time.Duration) error {
	timer := time.NewTimer(budget)
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
		// Granted. A context that has ended never wins (x/sync's
		// semaphore does the same): the slot is handed on below.
		select {
		case <-ctx.Done():
			err = ctx.Err()
		default:
			return nil
		}
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = admission.Reject(admission.CapacityExhausted, msgSessionBusy)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-w.ready:
		// Granted while leaving: pass the slot on, as if w completed.
		delete(g.inFlight, w.req)
		g.releaseLocked(s)
	default:
		s.waiters.Remove(elem)
		g.waiting--
		g.forgetIfIdleLocked(s)
	}
	return err
}

// OnEvent releases the slot of a request the gate admitted, on its
// Completed or Aborted event, once; other events and other requests are
// ignored. It never blocks beyond the gate's short critical section.
func (g *sessionGate) OnEvent(e admission.Event) {
	if e.Kind != admission.Completed && e.Kind != admission.Aborted || e.Request == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.inFlight[e.Request]
	if !ok {
		return
	}
	delete(g.inFlight, e.Request)
	g.releaseLocked(s)
}

// releaseLocked frees one of s's slots: it goes straight to the oldest
// waiter, if any, so no newcomer can take it first.
func (g *sessionGate) releaseLocked(s *session) {
	if e := s.waiters.Front(); e != nil {
		w := s.waiters.Remove(e).(*sessionWaiter)
		g.waiting--
		g.inFlight[w.req] = s
		close(w.ready)
		return
	}
	s.active--
	g.forgetIfIdleLocked(s)
}

// forgetIfIdleLocked drops s once it has nothing in flight and nobody
// waiting, so the sessions map holds only live sessions.
func (g *sessionGate) forgetIfIdleLocked(s *session) {
	if s.active == 0 && s.waiters.Len() == 0 {
		delete(g.sessions, s.id)
	}
}
