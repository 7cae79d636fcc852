package limiter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Errors returned by Acquire that callers branch on. A context that ends
// while waiting is reported with ctx.Err(), unchanged.
var (
	// ErrQueueFull means every slot is held and the queue holds QueueLen
	// waiters: the request is refused at once.
	ErrQueueFull = errors.New("limiter: engine slots and queue are full")
	// ErrQueueTimeout means the request waited in the queue until its
	// deadline (Options.QueueTimeout or Request.Deadline) without a slot.
	ErrQueueTimeout = errors.New("limiter: queue wait timed out")
	// ErrQueueExpired, which wraps ErrQueueTimeout, means the deadline was
	// Options.QueueTimeout, the queue delay of Dynamo's controlled delay,
	// rather than the request's own.
	ErrQueueExpired = fmt.Errorf("limiter: queue delay exceeded: %w", ErrQueueTimeout)
	// ErrQueueTokens means the tokens of the waiting requests and the
	// request's own would exceed Options.QueueTokenLimit: the request is
	// refused at once. It is not ErrQueueFull, so that a caller can name
	// the reason (queue_tokens). A request that finds nobody waiting is
	// never refused with it, however many tokens it has.
	ErrQueueTokens = errors.New("limiter: the queue's token limit is reached")
	// ErrWouldWait means TryAcquire found no slot free for the request but
	// room for it in the queue: it must be asked for with AcquireRequest.
	ErrWouldWait = errors.New("limiter: the request would wait in the queue")
)

// Options configure a Limiter.
type Options struct {
	// Slots is N, the number of requests that may be admitted at once
	// (Dynamo's engine request limit). Zero means no such limit, which is
	// allowed only when WaitingLimit is set; otherwise it must be at least
	// 1.
	Slots int
	// WaitingLimit is W, the number of admitted requests that may still be
	// waiting for their first generated token at once (Dynamo 1.7's engine
	// waiting limit): a request holds its waiting place from admission
	// until Permit.FirstToken or Permit.Release. Zero means no such limit.
	WaitingLimit int
	// QueueLen is Q, the number of requests that may wait for a slot. Zero
	// means no queue: a request that finds every slot held is refused.
	QueueLen int
	// QueueTimeout bounds the time a request waits in the queue. Zero means
	// no bound, as in Dynamo.
	QueueTimeout time.Duration
	// AdaptiveLIFO makes the admission that follows an expiry of the queue
	// delay (QueueTimeout) go to the newest waiter instead of the oldest,
	// once per expiry (Dynamo PR
	// #14369): when the queue is so long that its head expires, the newest
	// request is the one most likely still to be wanted.
	AdaptiveLIFO bool
	// PrefillTokenLimit is P, the most prompt tokens that the admitted
	// requests still before their first token may add up to (each holds
	// its Request.Tokens from admission until Permit.FirstToken or
	// Permit.Release). A request larger than P alone is admitted when no
	// tokens at all are in prefill. Zero means no such limit.
	PrefillTokenLimit int64
	// QueueTokenLimit is the most prompt tokens the waiting requests may
	// add up to; a request that would exceed it is refused with
	// ErrQueueTokens, unless nobody waits. Zero means no such limit.
	QueueTokenLimit int64
	// Classes are the policy classes, in order; Request.Class indexes them.
	// Each class has its own FIFO queue, and freed slots are shared among
	// the classes by deficit round robin; all classes together hold at most
	// QueueLen waiters. Empty: one FIFO queue (class 0), as before.
	Classes []Class
}

// Request carries what one caller asks of Acquire beyond its context. The
// zero value is a plain FIFO request of class 0.
type Request struct {
	// Class indexes Options.Classes; it must be 0 when no classes are
	// configured. Out of range, AcquireRequest returns an error wrapping
	// ErrBadClass. An unlimited limiter never queues and ignores it.
	Class int
	// Cost is the scheduling cost charged to the class's deficit when the
	// request is granted a slot after queuing: its share of the class's
	// quantum. Zero or less means 1; more than 2^40 counts as 2^40. It is
	// ignored when no classes are configured.
	Cost int
	// Deadline, when not zero, ends the queue wait at that instant with
	// ErrQueueTimeout. The earlier of it and Options.QueueTimeout applies.
	Deadline time.Time
	// OnQueued, when set, is called once, outside the limiter's lock and
	// before waiting, if the request enters the queue. The gate uses it to
	// start watching the client (the HTTP proxy reads the request body), so
	// that a departing client is seen.
	OnQueued func()
	// Tokens is the request's prompt tokens: what it holds of
	// Options.PrefillTokenLimit while in prefill, and of QueueTokenLimit
	// while waiting. Zero or less counts as 0, more than 2^40 as 2^40.
	Tokens int64
	// TokenCount, when set, carries a count that may still grow while the
	// request waits (a body that is still arriving): the request holds the
	// larger of Tokens and the count, as it stands at each step. See
	// TokenCount.
	TokenCount *TokenCount
	// Held, when set, is the queue place this request holds on its way to
	// wait (TryReserve): its own, not counted against it. A decision other
	// than "would wait" (TryAcquire, Refuses, TryReserve), and any decision
	// of AcquireRequest or Park, ends it under the same lock, the request
	// taking the place it held when it waits; so no other request can take
	// the place in between. A call refused before the limiter looks (a bad
	// class, a context already ended) gives it back.
	Held *Reservation
}

// Limiter is an exact admission gate of three limits and a queue. The zero
// value is not usable; use New or NewUnlimited. All methods are safe for
// concurrent use.
type Limiter struct {
	mu         sync.Mutex
	slots      int // N; math.MaxInt when unset
	waitLimit  int // W; math.MaxInt when unset
	queueLen   int
	holding    int // admitted, not released
	prefilling int // admitted, before their first token, not released
	waiting    int
	// reserved counts the queue places held by Reservations: requests on
	// their way to wait (TryReserve), counted with the waiters against Q.
	reserved int
	queue    queue
	// prefillLimit (P) and queueTokenLimit are math.MaxInt64 when unset;
	// prefillTokens are the tokens of the requests counted in prefilling,
	// queuedTokens those of the waiters.
	prefillLimit, queueTokenLimit int64
	prefillTokens, queuedTokens   int64
	timeout                       time.Duration
	unlimited                     bool
	lifo                          bool   // adaptive LIFO is on
	lifoNext                      bool   // a queue timeout happened: the next grant is LIFO
	seq                           uint64 // arrival order of waiters, for LIFO among classes
	// queueBound is the most waiters and reservations there may be:
	// QueueLen, or more just after QueueLen was lowered below those then
	// counted. Admission checks QueueLen; CheckInvariants (tests) checks
	// this bound.
	queueBound int
	// classes has at least one entry; Request.Class indexes it. Each class
	// counts the queue outcomes of its requests; Stats adds them up.
	classes []class

	admittedDirect atomic.Uint64
}

// New returns a Limiter with the limits of opts.
func New(opts Options) (*Limiter, error) {
	lim := Limits{
		Slots: opts.Slots, WaitingLimit: opts.WaitingLimit, QueueLen: opts.QueueLen,
		PrefillTokenLimit: opts.PrefillTokenLimit, QueueTokenLimit: opts.QueueTokenLimit,
	}
	errs := lim.check()
	if opts.QueueTimeout < 0 {
		errs = append(errs, fmt.Errorf("queue timeout must not be negative, got %s", opts.QueueTimeout))
	}
	classes, classErrs := newClasses(opts.Classes)
	errs = append(errs, classErrs...)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("limiter: %w", err)
	}
	var q queue = &fifo{}
	if len(opts.Classes) > 0 {
		q = &drr{}
	}
	l := &Limiter{timeout: opts.QueueTimeout, lifo: opts.AdaptiveLIFO, queue: q, classes: classes}
	l.setLimitsLocked(lim)
	return l, nil
}

// NewUnlimited returns a Limiter that admits every request at once and never
// queues or refuses: the pass-through used when no engine limit is set. It
// still counts holders, so gauges keep their meaning.
func NewUnlimited() *Limiter {
	return &Limiter{
		slots: math.MaxInt, waitLimit: math.MaxInt, queue: &fifo{}, unlimited: true, classes: make([]class, 1),
		prefillLimit: math.MaxInt64, queueTokenLimit: math.MaxInt64,
	}
}

// Acquire asks for a slot with a plain FIFO request. See AcquireRequest.
func (l *Limiter) Acquire(ctx context.Context) (*Permit, error) {
	return l.AcquireRequest(ctx, Request{})
}

// AcquireRequest admits the request at once when N and W have room, its
// tokens fit P and nobody waits (in any class), queues it when the queue
// has room in total, in its class and in tokens, and otherwise refuses it
// with ErrQueueFull or ErrQueueTokens without waiting.
//
// On success it returns the request's Permit, which holds its slot, its
// waiting place and its tokens until released. On failure it returns
// ErrQueueFull, ErrQueueTokens, ErrQueueTimeout or ctx.Err(), and the
// limiter is left as if the call
// never happened. A request whose Class is out of range is refused first,
// with an error wrapping ErrBadClass; then a context that has already
// ended is refused with ctx.Err(). Neither is counted.
func (l *Limiter) AcquireRequest(ctx context.Context, req Request) (*Permit, error) {
	if err := l.classErr(req); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		req.Held.Release()
		return nil, err
	}
	l.mu.Lock()
	t := requestTokens(req)
	v := l.admitLocked(req, t)
	l.endHeldLocked(req)
	if v != waits {
		l.mu.Unlock()
		return l.atOnce(v, req.Class, t)
	}
	w := l.enqueueLocked(req, t, nil)
	l.mu.Unlock()
	deadline, expiry := l.deadline(req) // the wait is measured from entering the queue
	if req.OnQueued != nil {
		l.onQueued(w, req.OnQueued)
	}
	return l.wait(ctx, w, deadline, expiry)
}

// TryAcquire is AcquireRequest without waiting: it admits the request at
// once when the limits have room and nobody waits, refuses it with
// ErrQueueFull when the queue (or its class) is full or ErrQueueTokens
// when its tokens would exceed the queue's, and otherwise
// returns ErrWouldWait, changing nothing. A caller that must prepare
// before waiting (a cancellable context, a body read) tries first, and
// prepares only when it would wait.
func (l *Limiter) TryAcquire(req Request) (*Permit, error) {
	p, _, err := l.try(req, false)
	if p == nil && err == nil {
		return nil, ErrWouldWait
	}
	return p, err
}

// Refuses is TryAcquire for a caller that can neither hold a slot nor
// wait where it stands (slotgate's front end, before net/http has the
// request): when TryAcquire would refuse the request, it counts the
// refusal as TryAcquire does and returns its error; otherwise it returns
// nil and changes nothing, and the caller asks again the usual way.
//
// A caller that does not know the request's tokens yet asks with none:
// a refusal then holds whatever its tokens, since no tokens fit the
// prefill-token budget best and the queue's limits come first.
func (l *Limiter) Refuses(req Request) error {
	if err := l.classErr(req); err != nil {
		return err
	}
	l.mu.Lock()
	t := requestTokens(req)
	v := l.verdictLocked(req, t)
	if v != granted && v != waits {
		l.endHeldLocked(req)
	}
	l.mu.Unlock()
	if v == granted || v == waits {
		return nil
	}
	_, err := l.atOnce(v, req.Class, t)
	return err
}

// verdict is what admitLocked decided for a request that has just arrived.
type verdict uint8

const (
	granted       verdict = iota // it holds a slot now
	refused                      // the queue, or its class's share of it, is full
	refusedTokens                // its tokens would exceed the queue's token limit
	waits                        // it would wait: room in the queue, no free slot
)

// admitLocked decides for a request of class cls and t tokens that has
// just arrived, with l.mu held, and takes the slot when it is granted one.
// It neither locks nor unlocks: its callers do both, so the lock's extent
// reads off each caller.
func (l *Limiter) admitLocked(req Request, t int64) verdict {
	v := l.verdictLocked(req, t)
	if v == granted {
		l.holding++
		l.prefilling++
		l.prefillTokens += t
	}
	return v
}

// verdictLocked is admitLocked's verdict, taking nothing. The queue
// places held count against the request, but for its own (Request.Held).
func (l *Limiter) verdictLocked(req Request, t int64) verdict {
	if l.waiting == 0 && l.roomLocked() && l.fitsLocked(t) {
		return granted
	}
	c := &l.classes[req.Class]
	switch {
	case l.waiting+l.reserved-l.ownLocked(req) >= l.queueLen || (c.limit > 0 && c.waiting >= c.limit):
		return refused
	case l.waiting > 0 && t > l.queueTokenLimit-l.queuedTokens:
		// Into an empty queue a request is never refused for its size.
		return refusedTokens
	}
	return waits
}

// enqueueLocked puts the request, of t tokens, in the queue and returns
// its waiter.
func (l *Limiter) enqueueLocked(req Request, t int64, pk *Parked) *waiter {
	c := &l.classes[req.Class]
	l.seq++
	w := &waiter{cls: c, cost: schedCost(req.Cost), seq: l.seq, tokens: t}
	if pk != nil {
		w.parked, pk.w = pk, w
	} else {
		w.ready = make(chan struct{})
	}
	l.queue.push(w)
	l.waiting++
	c.waiting++
	l.queuedTokens += t
	c.queuedTokens += t
	if req.TokenCount != nil {
		req.TokenCount.attachLocked(l, w)
	}
	if l.roomLocked() {
		// N and W have room, so the next waiter's tokens did not fit P.
		// The newcomer may be the next waiter now: the newest, when
		// adaptive LIFO's grant is due, or of a class the round robin
		// serves first. It is granted if it fits.
		l.dispatchLocked()
	}
	return w
}

// roomLocked reports whether N and W have room for one more request.
func (l *Limiter) roomLocked() bool {
	return l.holding < l.slots && l.prefilling < l.waitLimit
}

// atOnce answers a request of class cls and t tokens that does not
// wait, by admitLocked's verdict v, outside the lock: the permit of a
// slot taken at arrival, or the error of its refusal; either is counted.
func (l *Limiter) atOnce(v verdict, cls int, t int64) (*Permit, error) {
	switch v {
	case granted:
		l.admittedDirect.Add(1)
		return &Permit{l: l, tokens: t}, nil
	case refusedTokens:
		l.classes[cls].rejectedTokens.Add(1)
		return nil, ErrQueueTokens
	}
	l.classes[cls].rejectedFull.Add(1)
	return nil, ErrQueueFull
}

// onQueued calls f for a waiter that has just entered the queue. Should f
// panic, the waiter leaves the queue before the panic goes on, so that no
// slot is ever granted to a caller that is no longer waiting.
func (l *Limiter) onQueued(w *waiter, f func()) {
	returned := false
	defer func() {
		if !returned {
			_, _ = l.giveUp(w, errOnQueuedPanicked)
		}
	}()
	f()
	returned = true
}

// errOnQueuedPanicked is the cause recorded when Request.OnQueued panics;
// the caller never sees it, since the panic continues.
var errOnQueuedPanicked = errors.New("limiter: OnQueued panicked")

// deadline is the earlier of the request's own deadline and the limiter's
// queue timeout, zero for none, and the error its passing gives.
func (l *Limiter) deadline(req Request) (time.Time, error) {
	d, expiry := req.Deadline, ErrQueueTimeout
	if l.timeout > 0 {
		if t := time.Now().Add(l.timeout); d.IsZero() || t.Before(d) {
			d, expiry = t, ErrQueueExpired
		}
	}
	return d, expiry
}

// wait waits for w's grant, its context's end or its deadline, which
// ends the wait with expiry.
func (l *Limiter) wait(ctx context.Context, w *waiter, deadline time.Time, expiry error) (*Permit, error) {
	var expired <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-w.ready:
		// Granted. If the context ended in the same instant, cancellation
		// wins: the caller is gone, so the slot goes to the next waiter.
		if err := ctx.Err(); err != nil {
			l.mu.Lock()
			l.reverseGrantLocked(w)
			l.mu.Unlock()
			w.cls.cancelledWaiting.Add(1)
			return nil, err
		}
		w.countAdmitted()
		return &Permit{l: l, tokens: w.tokens}, nil
	case <-ctx.Done():
		return l.giveUp(w, ctx.Err())
	case <-expired:
		// The deadline and the context may end together (select picks
		// either). A context that ended wins here too, as in the case above,
		// so that a cancelled caller is never given a slot that was granted
		// in the same instant.
		if err := ctx.Err(); err != nil {
			return l.giveUp(w, err)
		}
		return l.giveUp(w, expiry)
	}
}

// giveUp takes w out of the queue after its context ended or its deadline
// passed. If w was granted a slot meanwhile, a cancelled caller hands the
// slot on, while a timed-out caller keeps it: the slot arrived in time.
// An expiry of the queue delay that takes a waiter out makes the next
// grant LIFO, when adaptive LIFO is on.
func (l *Limiter) giveUp(w *waiter, cause error) (*Permit, error) {
	timedOut := errors.Is(cause, ErrQueueTimeout)
	l.mu.Lock()
	if !w.granted {
		l.removeLocked(w, cause)
		l.mu.Unlock()
		countGiveUp(w.cls, cause)
		return nil, cause
	}
	if timedOut {
		l.mu.Unlock()
		w.countAdmitted()
		return &Permit{l: l, tokens: w.tokens}, nil
	}
	l.reverseGrantLocked(w)
	l.mu.Unlock()
	countGiveUp(w.cls, cause)
	return nil, cause
}

// removeLocked takes w, not granted, out of the queue, which it leaves
// with cause.
func (l *Limiter) removeLocked(w *waiter, cause error) {
	l.queue.remove(w)
	l.dequeuedLocked(w)
	if l.lifo && errors.Is(cause, ErrQueueExpired) {
		l.lifoNext = true
	}
	if l.waiting == 0 {
		l.lifoNext = false // nobody left to serve: no later backlog inherits it
	}
	// w may have been the waiter whose tokens did not fit, holding up
	// those behind it (or a LIFO grant is now due): the next may fit.
	l.dispatchLocked()
}

func countGiveUp(c *class, cause error) {
	if errors.Is(cause, ErrQueueTimeout) {
		c.timedOut.Add(1)
	} else {
		c.cancelledWaiting.Add(1)
	}
}

// reverseGrantLocked undoes the grant of w, whose caller left in the same
// instant: the queue refunds what the grant charged (drr.refund), then the
// slot is freed and handed on. The refund comes first so that the next
// grant, made under the same lock, already sees the class's credit.
func (l *Limiter) reverseGrantLocked(w *waiter) {
	l.queue.refund(w)
	l.releaseLocked(true, w.tokens)
}

// releaseSlot is releaseLocked under the lock, for tests.
func (l *Limiter) releaseSlot(prefilling bool, tokens int64) {
	l.mu.Lock()
	l.releaseLocked(prefilling, tokens)
	l.mu.Unlock()
}

// releaseLocked frees one admitted request's slot, and its waiting place
// and its tokens when it still holds them, then admits the waiters the
// freed room allows. The room passes directly to the next waiter under the
// same lock, which leaves no instant in which a newcomer could take it.
// After a limit was lowered, holders above it simply leave.
func (l *Limiter) releaseLocked(prefilling bool, tokens int64) {
	l.holding--
	if prefilling {
		l.prefilling--
		l.prefillTokens -= tokens
	}
	l.dispatchLocked()
}

// firstTokenLocked frees one admitted request's waiting place and its
// tokens, and admits the waiters the freed room allows.
func (l *Limiter) firstTokenLocked(tokens int64) {
	l.prefilling--
	l.prefillTokens -= tokens
	l.dispatchLocked()
}

// dispatchLocked admits waiters while N and W have room and the tokens of
// the waiter next in order fit P: the oldest (or the one deficit round
// robin picks among classes), or the newest once after a timeout when
// adaptive LIFO is on. A next waiter that does not fit holds up those
// behind it: none is skipped, which keeps the order exact and lets a
// large prompt through once prefill has drained.
func (l *Limiter) dispatchLocked() {
	for l.waiting > 0 && l.roomLocked() && l.nextFitsLocked() {
		var w *waiter
		if l.lifoNext {
			l.lifoNext = false
			w = l.queue.popNewest()
			w.lifo = true
		} else {
			w = l.queue.pop()
		}
		l.holding++
		l.prefilling++
		l.prefillTokens += w.tokens
		l.grantLocked(w)
	}
}

// grantLocked hands a slot to w, which has just left the queue; the
// caller has counted it in holding, prefilling and prefillTokens.
func (l *Limiter) grantLocked(w *waiter) {
	l.dequeuedLocked(w)
	w.granted = true
	if w.parked != nil {
		go w.parked.granted() // its own goroutine: the caller holds the lock
		return
	}
	close(w.ready)
}

// dequeuedLocked uncounts w, which has just left the queue, from the
// waiters and their tokens; its count stops growing.
func (l *Limiter) dequeuedLocked(w *waiter) {
	l.waiting--
	w.cls.waiting--
	l.queuedTokens -= w.tokens
	w.cls.queuedTokens -= w.tokens
	if w.count != nil {
		w.count.w = nil
	}
}
