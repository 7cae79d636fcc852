package gate

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/load/inflight"
)

// DefaultClass is the policy class of every request when no admission
// policy is configured.
const DefaultClass = "default"

// Options configure a Gate.
type Options struct {
	// Limiter admits the requests of the whole engine. Required unless
	// Ranks is set; limiter.NewUnlimited gives a pure pass-through.
	Limiter *limiter.Limiter
	// Limiters, when set instead of Limiter, are the limiters: with one
	// per data-parallel rank (RankLimiters), a request pinned to a rank
	// takes that rank's places, and one pinned to none goes to the rank
	// with the most room.
	Limiters *Limiters
	// Policy, when set, classifies each request before it is queued; nil
	// admits every request as class DefaultClass.
	Policy *Policy
	// Flights counts the prompt and generated tokens of the admitted
	// requests as they pass; nil counts nothing.
	Flights *inflight.Tracker
	// Busy, when set, is asked before admission: while it returns true,
	// new requests are refused with outcome rejected_busy.
	Busy func() bool
	// Changed, when set, is called after the admission state may have
	// changed: a request entered the queue, or a request ended (its slot
	// or queue place released). It must not block.
	Changed func()
	// Observer receives measurements; nil discards them.
	Observer Observer
	// Logger gets the classifier's failures; nil logs nothing.
	Logger *slog.Logger
	// AbortGrace is how long the slot of a request whose client left
	// while the engine served it stays taken before it is handed on (see
	// DefaultAbortGrace for why); 0 means DefaultAbortGrace, and a
	// negative value is refused.
	AbortGrace time.Duration
	// NoAbortGrace hands such a slot on at once, as for any other
	// request; AbortGrace must then be 0.
	NoAbortGrace bool
	// PaceRetryAfter makes RetryAfter compute each overload refusal's
	// retry hint from the engine's pace (slotgate's --retry-after auto).
	PaceRetryAfter bool
}

// Policy is the admission policy applied before queueing.
type Policy struct {
	// Classifier classifies each request. Required.
	Classifier admission.Classifier
	// Classes are the configured policy classes, in the order of the
	// limiter's Options.Classes. Required, at least one.
	Classes []string
	// DefaultClass is a request's class before classification; one of
	// Classes. Required.
	DefaultClass string
	// SessionHeader names the header that carries a session identity.
	SessionHeader string
	// CaptureHeaders are the headers a classifier may read, lower-case.
	CaptureHeaders []string
}

// Gate admits requests through the limiter and the policy. It is safe for
// concurrent use. It starts no goroutine but timers, each ended with its
// request: the classifier's deferral timer and the abort grace.
type Gate struct {
	ranks     *Limiters
	policy    *Policy
	flights   *inflight.Tracker
	busy      func() bool
	changed   func()
	obs       Observer
	log       *slog.Logger
	class     string // the class of an unclassified request
	grace     time.Duration
	unlimited bool // the limiter has no cap, hence no queues
	draining  atomic.Bool
	pace      *pace // nil: the retry hint is the adapters' fixed one
}

// New checks opts and returns a Gate.
func New(opts Options) (*Gate, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	ranks := opts.Limiters
	if ranks == nil {
		ranks = EngineLimiter(opts.Limiter)
	}
	g := &Gate{
		ranks: ranks, policy: opts.Policy, flights: opts.Flights, busy: opts.Busy,
		changed: opts.Changed, obs: opts.Observer, log: opts.Logger,
		class: DefaultClass, grace: opts.AbortGrace, unlimited: ranks.all()[0].Stats().Unlimited,
	}
	if err := g.policy.matchesLimiter(ranks.all()[0]); err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	if g.policy != nil {
		g.class = g.policy.DefaultClass
	}
	if opts.PaceRetryAfter {
		g.pace = new(pace)
	}
	if g.grace == 0 && !opts.NoAbortGrace {
		g.grace = DefaultAbortGrace
	}
	if g.changed == nil {
		g.changed = func() {}
	}
	if g.obs == nil {
		g.obs = nopObserver{}
	}
	if g.log == nil {
		g.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return g, nil
}

func (o *Options) validate() error {
	switch {
	case o.Limiter == nil && o.Limiters == nil:
		return errors.New("a limiter is required")
	case o.Limiter != nil && o.Limiters != nil:
		return errors.New("set a limiter or limiters, not both")
	case o.AbortGrace < 0:
		return fmt.Errorf("abort grace %s is negative", o.AbortGrace)
	case o.AbortGrace != 0 && o.NoAbortGrace:
		return errors.New("set an abort grace or none, not both")
	}
	if o.Policy == nil {
		return nil
	}
	return o.Policy.validate()
}

// matchesLimiter checks a policy, if any, against the limiter's queues.
func (a *Policy) matchesLimiter(l *limiter.Limiter) error {
	if a == nil {
		return nil
	}
	return a.matches(l.Stats())
}

func (a *Policy) validate() error {
	switch {
	case a.Classifier == nil || len(a.Classes) == 0:
		return errors.New("admission: a classifier and at least one class are required")
	case !slices.Contains(a.Classes, a.DefaultClass):
		return errors.New("admission: the default class must be one of the classes")
	}
	return nil
}

// matches checks that the classes are the limiter's queues, in order: a
// request of class i waits in queue i. A limiter without a cap has no
// queues and takes any class; one with a single unnamed queue takes a
// single class.
func (a *Policy) matches(s limiter.Stats) error {
	if s.Unlimited {
		return nil
	}
	if len(s.Classes) == 1 && s.Classes[0].Name == "" && len(a.Classes) == 1 {
		return nil
	}
	names := make([]string, len(s.Classes))
	for i, c := range s.Classes {
		names[i] = c.Name
	}
	if !slices.Equal(names, a.Classes) {
		return fmt.Errorf("admission: classes %q differ from the limiter's queues %q", a.Classes, names)
	}
	return nil
}

// StartDraining makes Admit refuse new requests with outcome
// rejected_draining; requests already admitted or queued go on. It cannot
// be undone.
func (g *Gate) StartDraining() { g.draining.Store(true) }

// Draining reports whether StartDraining was called.
func (g *Gate) Draining() bool { return g.draining.Load() }

// Stats returns the limiter's counts; with limits per rank, the sums of
// every rank's, limits included.
func (g *Gate) Stats() limiter.Stats { return g.ranks.Stats() }

// Limiters returns the gate's limiters, whose limits may change at run
// time.
func (g *Gate) Limiters() *Limiters { return g.ranks }

// Policy returns the admission policy; nil without one. Adapters read
// which headers to give the classifier.
func (g *Gate) Policy() *Policy { return g.policy }
