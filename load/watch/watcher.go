package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotgate/slotgate/load/report"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultExpiry     = 3 * time.Second
	DefaultBackoffMin = 100 * time.Millisecond
	DefaultBackoffMax = 5 * time.Second
)

// ErrExists is returned by Add for a name already watched.
var ErrExists = errors.New("watch: worker already added")

// Options configure a Watcher.
type Options struct {
	// Client sends the stream requests; nil means a client of the
	// Watcher's own, on a clone of http.DefaultTransport, whose idle
	// connections Run closes when it returns. Its Timeout must be 0: a
	// stream lasts as long as the sidecar does, and the Watcher bounds
	// silence itself, with Expiry.
	Client *http.Client
	// Expiry is how long a worker stays Fresh after its newest snapshot
	// arrived: with none newer by then it is Expired, and not eligible.
	// 0 means DefaultExpiry. Keep it a few sidecar heartbeats
	// (report.Heartbeat, 1 s).
	Expiry time.Duration
	// BackoffMin and BackoffMax bound the delay before a reconnect: it
	// doubles from BackoffMin up to BackoffMax with each failed attempt,
	// and the wait is drawn from [delay/2, delay]. A retry field sent by
	// the sidecar raises the delay, still within BackoffMax. 0 means
	// DefaultBackoffMin and DefaultBackoffMax.
	BackoffMin, BackoffMax time.Duration
	// Logger receives each worker's state changes, once each; nil means
	// none.
	Logger *slog.Logger
}

// Watcher tracks the load of many workers through their sidecars' load
// streams. Run does the watching; the other methods are safe from any
// goroutine, before, while and after Run runs.
type Watcher struct {
	client     *http.Client
	ownClient  bool
	expiry     time.Duration
	bmin, bmax time.Duration
	log        *slog.Logger
	errSilent  error // the cause of dropping a silent connection

	running atomic.Bool
	wake    chan struct{} // buffered (1): Run recomputes when to sweep next
	wg      sync.WaitGroup

	mu        sync.Mutex
	workers   map[string]*worker
	changed   chan struct{}   // closed at the next change, then replaced
	runCtx    context.Context // Run's; nil before Run
	stopped   bool            // Run is ending: start no goroutine
	nextSweep time.Time       // when Run sweeps next; zero when nothing is due
}

// New checks opts, applies the defaults and returns a Watcher with no
// worker. It starts nothing. It fails with every problem in opts, joined.
func New(opts Options) (*Watcher, error) {
	w := &Watcher{
		client: opts.Client, expiry: cmpOr(opts.Expiry, DefaultExpiry),
		bmin: cmpOr(opts.BackoffMin, DefaultBackoffMin), bmax: cmpOr(opts.BackoffMax, DefaultBackoffMax),
		log: opts.Logger, wake: make(chan struct{}, 1),
		workers: make(map[string]*worker), changed: make(chan struct{}),
	}
	var errs []error
	if opts.Expiry < 0 || opts.BackoffMin < 0 || opts.BackoffMax < 0 {
		errs = append(errs, errors.New("watch: Expiry, BackoffMin and BackoffMax must not be negative"))
	}
	if w.bmin > w.bmax {
		errs = append(errs, fmt.Errorf("watch: BackoffMin %s is over BackoffMax %s", w.bmin, w.bmax))
	}
	if w.client != nil && w.client.Timeout != 0 {
		errs = append(errs, errors.New("watch: Client.Timeout must be 0: it would end every stream"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if w.client == nil {
		w.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		w.ownClient = true
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.errSilent = fmt.Errorf("no new snapshot for %s", w.expiry)
	return w, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Add watches the worker name through its sidecar's admin URL
// (http[s]://host:port, with an optional path prefix), from which it
// follows report.PathStream. The worker is Unknown until its first
// snapshot arrives. While Run runs, its goroutine starts at once; before
// Run, with Run. After Run has returned, the worker is recorded but never
// watched. Add fails on an empty name, a malformed URL, or a name already
// watched (ErrExists).
func (w *Watcher) Add(name, adminURL string) error {
	if name == "" {
		return errors.New("watch: empty worker name")
	}
	stream, err := streamURL(adminURL)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.workers[name]; ok {
		return fmt.Errorf("%w: %q", ErrExists, name)
	}
	wk := &worker{name: name, url: stream, log: w.log.With("worker", name, "url", adminURL)}
	w.workers[name] = wk
	w.startLocked(wk)
	return nil
}

func streamURL(adminURL string) (string, error) {
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", fmt.Errorf("watch: admin URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("watch: admin URL %q: want http[s]://host:port[/prefix]", adminURL)
	}
	return u.JoinPath(report.PathStream).String(), nil
}

// Remove stops watching name and forgets what was known of it; it returns
// once the worker's goroutine, if any, has ended. Removing a name not
// watched does nothing.
func (w *Watcher) Remove(name string) {
	w.mu.Lock()
	wk := w.workers[name]
	if wk == nil {
		w.mu.Unlock()
		return
	}
	delete(w.workers, name)
	w.notifyLocked()
	stop, done := wk.stop, wk.done
	w.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// Run watches every worker added, before or while it runs, with one
// goroutine each, and expires the silent ones, until ctx ends. It returns
// nil once every goroutine it started has ended. Run may be called once;
// a second call returns an error at once.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("watch: Run called twice")
	}
	w.mu.Lock()
	w.runCtx = ctx
	for _, wk := range w.workers {
		w.startLocked(wk)
	}
	w.mu.Unlock()

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for done := false; !done; {
		now := time.Now()
		if next := w.sweep(now); !next.IsZero() {
			timer.Reset(next.Sub(now))
		} else {
			timer.Stop()
		}
		select {
		case <-ctx.Done():
			done = true
		case <-timer.C:
		case <-w.wake:
		}
	}

	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.wg.Wait()
	if w.ownClient {
		w.client.CloseIdleConnections()
	}
	return nil
}

// startLocked starts wk's goroutine if Run runs.
func (w *Watcher) startLocked(wk *worker) {
	if w.runCtx == nil || w.stopped {
		return
	}
	ctx, stop := context.WithCancel(w.runCtx)
	wk.stop, wk.done = stop, make(chan struct{})
	w.wg.Go(func() {
		defer close(wk.done)
		w.follow(ctx, wk)
	})
}

// sweep expires the workers whose snapshot is older than Expiry and drops
// the connections silent for as long. It returns when it is due next, or
// zero when nothing is.
func (w *Watcher) sweep(now time.Time) time.Time {
	type expiry struct {
		log *slog.Logger
		seq uint64
	}
	var expired []expiry
	w.mu.Lock()
	var next time.Time
	for _, wk := range w.workers {
		if wk.snap != nil && !wk.expired {
			if due := wk.received.Add(w.expiry); now.Before(due) {
				next = earliest(next, due)
			} else {
				wk.expired = true
				expired = append(expired, expiry{wk.log, wk.snap.Seq})
			}
		}
		if wk.drop != nil {
			if now.Before(wk.connDeadline) {
				next = earliest(next, wk.connDeadline)
			} else {
				// The worker's goroutine logs the end of the attempt.
				wk.drop(w.errSilent)
				wk.drop = nil
			}
		}
	}
	if len(expired) > 0 {
		w.notifyLocked()
	}
	w.nextSweep = next
	w.mu.Unlock()
	for _, e := range expired {
		e.log.Warn("expired", "after", w.expiry, "seq", e.seq)
	}
	return next
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// wakeLocked has Run sweep again if deadline comes before its next sweep.
func (w *Watcher) wakeLocked(deadline time.Time) {
	if w.nextSweep.IsZero() || deadline.Before(w.nextSweep) {
		w.nextSweep = deadline
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// Changed returns a channel that is closed at the next change that may
// alter Busy or Eligible: a worker turning Fresh, Expired, busy or idle,
// or removed. Heartbeats and load changes that keep the busy verdict do
// not count: read them with Load. Take the channel before reading the
// state, then wait on it, and no change is missed:
//
//	for {
//		ch := w.Changed()
//		route(w.Eligible(candidates))
//		<-ch
//	}
func (w *Watcher) Changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

func (w *Watcher) notifyLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}
