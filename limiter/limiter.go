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
	// ErrWouldWait means TryAcquire found no slot free for the request but
	// room for it in the queue: it must be asked for with AcquireRequest.
	ErrWouldWait = errors.New("limiter: the request would wait in the queue")
)

// Options configure a Limiter.
type Options struct {
	// Slots is N, the number of requests that may hold an engine slot at
	// once. It must be at least 1.
	Slots int
	// QueueLen is Q, the number of requests that may wait for a slot. Zero
	// means no queue: a request that finds every slot held is refused.
	QueueLen int
	// QueueTimeout bounds the time a request waits in the queue. Zero means
	// no bound, as in Dynamo.
	QueueTimeout time.Duration
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
}

// Limiter is an exact N+Q admission gate. The zero value is not usable; use
// New or NewUnlimited. All methods are safe for concurrent use.
type Limiter struct {
	mu        sync.Mutex
	slots     int
	queueLen  int
	holding   int
	waiting   int
	queue     queue
	timeout   time.Duration
	unlimited bool
	// classes has at least one entry; Request.Class indexes it. Each class
	// counts the queue outcomes of its requests; Stats adds them up.
	classes []class

	admittedDirect atomic.Uint64
}

// New returns a Limiter with opts.Slots slots and opts.QueueLen queue places.
func New(opts Options) (*Limiter, error) {
	var errs []error
	if opts.Slots < 1 {
		errs = append(errs, fmt.Errorf("slots must be at least 1, got %d", opts.Slots))
	}
	if opts.QueueLen < 0 {
		errs = append(errs, fmt.Errorf("queue length must not be negative, got %d", opts.QueueLen))
	}
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
	return &Limiter{
		slots:    opts.Slots,
		queueLen: opts.QueueLen,
		timeout:  opts.QueueTimeout,
		queue:    q,
		classes:  classes,
	}, nil
}

// NewUnlimited returns a Limiter that admits every request at once and never
// queues or refuses: the pass-through used when no engine limit is set. It
// still counts holders, so gauges keep their meaning.
func NewUnlimited() *Limiter {
	return &Limiter{slots: math.MaxInt, queue: &fifo{}, unlimited: true, classes: make([]class, 1)}
}

// Acquire asks for a slot with a plain FIFO request. See AcquireRequest.
func (l *Limiter) Acquire(ctx context.Context) (release func(), err error) {
	return l.AcquireRequest(ctx, Request{})
}

// AcquireRequest takes a slot at once when one is free and nobody waits (in
// any class), queues the request when the queue has room in total and in
// its class, and otherwise refuses it with ErrQueueFull without waiting.
//
// On success it returns a release function that frees the slot (or hands it
// to the next waiter); calling it more than once is a caller bug that does
// nothing. On failure it returns ErrQueueFull, ErrQueueTimeout or ctx.Err(),
// and the limiter is left as if the call never happened. A request whose
// Class is out of range is refused first, with an error wrapping
// ErrBadClass; then a context that has already ended is refused with
// ctx.Err(). Neither is counted.
func (l *Limiter) AcquireRequest(ctx context.Context, req Request) (release func(), err error) {
	if uint(req.Class) >= uint(len(l.classes)) && !l.unlimited {
		return nil, l.badClass(req.Class)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	switch l.admitLocked(req) {
	case granted:
		l.mu.Unlock()
		return l.grantedDirect(), nil
	case refused:
		l.mu.Unlock()
		return nil, l.refusedFull(req)
	}
	c := &l.classes[req.Class]
	w := &waiter{ready: make(chan struct{}), cls: c, cost: schedCost(req.Cost)}
	l.queue.push(w)
	l.waiting++
	c.waiting++
	l.mu.Unlock()
	deadline := l.deadline(req) // the wait is measured from entering the queue
	if req.OnQueued != nil {
		l.onQueued(w, req.OnQueued)
	}
	return l.wait(ctx, w, deadline)
}

// TryAcquire is AcquireRequest without waiting: it takes a slot at once
// when one is free and nobody waits, refuses the request with ErrQueueFull
// when the queue (or its class) is full, and otherwise returns
// ErrWouldWait, changing nothing. A caller that must prepare before
// waiting (a cancellable context, a body read) tries first, and prepares
// only when it would wait.
func (l *Limiter) TryAcquire(req Request) (release func(), err error) {
	if uint(req.Class) >= uint(len(l.classes)) && !l.unlimited {
		return nil, l.badClass(req.Class)
	}
	l.mu.Lock()
	v := l.admitLocked(req)
	l.mu.Unlock()
	switch v {
	case granted:
		return l.grantedDirect(), nil
	case refused:
		return nil, l.refusedFull(req)
	}
	return nil, ErrWouldWait
}

// verdict is what admitLocked decided for a request that has just arrived.
type verdict uint8

const (
	granted verdict = iota // it holds a slot now
	refused                // the queue, or its class's share of it, is full
	waits                  // it would wait: room in the queue, no free slot
)

// admitLocked decides for a request that has just arrived, with l.mu held,
// and takes the slot when it is granted one. It neither locks nor unlocks:
// its callers do both, so the lock's extent reads off each caller.
func (l *Limiter) admitLocked(req Request) verdict {
	if l.holding < l.slots && l.waiting == 0 {
		l.holding++
		return granted
	}
	c := &l.classes[req.Class]
	if l.waiting >= l.queueLen || (c.limit > 0 && c.waiting >= c.limit) {
		return refused
	}
	return waits
}

// grantedDirect counts a slot taken at arrival and returns its release.
func (l *Limiter) grantedDirect() func() {
	l.admittedDirect.Add(1)
	return l.newRelease()
}

// refusedFull counts a request refused at arrival.
func (l *Limiter) refusedFull(req Request) error {
	l.classes[req.Class].rejectedFull.Add(1)
	return ErrQueueFull
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
// queue timeout; zero means none.
func (l *Limiter) deadline(req Request) time.Time {
	d := req.Deadline
	if l.timeout > 0 {
		if t := time.Now().Add(l.timeout); d.IsZero() || t.Before(d) {
			d = t
		}
	}
	return d
}

func (l *Limiter) wait(ctx context.Context, w *waiter, deadline time.Time) (func(), error) {
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
			l.releaseSlot()
			w.cls.cancelledWaiting.Add(1)
			return nil, err
		}
		w.cls.admittedQueued.Add(1)
		return l.newRelease(), nil
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
		return l.giveUp(w, ErrQueueTimeout)
	}
}

// giveUp takes w out of the queue after its context ended or its deadline
// passed. If w was granted a slot meanwhile, a cancelled caller hands the
// slot on, while a timed-out caller keeps it: the slot arrived in time.
func (l *Limiter) giveUp(w *waiter, cause error) (func(), error) {
	l.mu.Lock()
	if !w.granted {
		l.queue.remove(w)
		l.waiting--
		w.cls.waiting--
		l.mu.Unlock()
		countGiveUp(w.cls, cause)
		return nil, cause
	}
	if errors.Is(cause, ErrQueueTimeout) {
		l.mu.Unlock()
		w.cls.admittedQueued.Add(1)
		return l.newRelease(), nil
	}
	l.releaseLocked()
	l.mu.Unlock()
	countGiveUp(w.cls, cause)
	return nil, cause
}

func countGiveUp(c *class, cause error) {
	if errors.Is(cause, ErrQueueTimeout) {
		c.timedOut.Add(1)
	} else {
		c.cancelledWaiting.Add(1)
	}
}

// newRelease returns a release function for one held slot. The flag makes a
// second call harmless instead of freeing a slot someone else holds.
func (l *Limiter) newRelease() func() {
	var released atomic.Bool
	return func() {
		if released.Swap(true) {
			return
		}
		l.releaseSlot()
	}
}

func (l *Limiter) releaseSlot() {
	l.mu.Lock()
	l.releaseLocked()
	l.mu.Unlock()
}

// releaseLocked frees one held slot. While the number of holders is within
// the limit the slot passes directly to the next waiter (the oldest, or the
// one deficit round robin picks among classes), which leaves no instant in
// which a newcomer could take it. After the
// limit was lowered, holders above it simply leave.
func (l *Limiter) releaseLocked() {
	if l.holding <= l.slots && l.waiting > 0 {
		l.grantLocked(l.queue.pop())
		return
	}
	l.holding--
}

// grantLocked hands a slot to w, which has just left the queue. The slot
// count is unchanged by a hand-over, so the caller adjusts holding when the
// slot was not already held.
func (l *Limiter) grantLocked(w *waiter) {
	l.waiting--
	w.cls.waiting--
	w.granted = true
	close(w.ready)
}

// SetSlots changes N at run time. Raising it admits waiters at once;
// lowering it never takes back a held slot: holders above the new limit
// finish and their slots are not handed on.
func (l *Limiter) SetSlots(n int) error {
	if n < 1 {
		return fmt.Errorf("limiter: slots must be at least 1, got %d", n)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.unlimited {
		return errors.New("limiter: an unlimited limiter has no slots to set")
	}
	l.slots = n
	for l.holding < l.slots && l.waiting > 0 {
		l.holding++
		l.grantLocked(l.queue.pop())
	}
	return nil
}
