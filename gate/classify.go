package gate

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/limiter"
)

// deferGrace is how long a classifier may take before the request's watch
// starts, so that a client that leaves while its request is deferred is
// seen. Classifiers that decide at once never pay for the watch.
const deferGrace = time.Millisecond

// errUnknownClass refuses a request whose classifier chose a policy class
// that is not configured.
var errUnknownClass = errors.New("unknown policy class")

// errClassifierPanicked refuses a request whose classifier panicked: a
// refusal by policy, the panic logged, the process unharmed.
var errClassifierPanicked = errors.New("classifier panicked")

// classify runs the classifier for the request. It returns the limiter
// request to queue it with, or an error when the classifier refused it or
// ctx ended while it deferred.
func (g *Gate) classify(ctx context.Context, ex *Exchange, req Request, w *watcher) (limiter.Request, error) {
	p := g.policy
	if p == nil {
		return limiter.Request{}, nil
	}
	areq := admission.NewRequest(admission.Inputs{
		ID: ex.ID, PolicyClass: p.DefaultClass, Ingress: ex.Start, Session: req.Session, Headers: req.Headers,
		InputTokens: req.InputTokens, InputTokensKnown: req.InputTokensKnown,
	})
	start := time.Now()
	err := g.runClassifier(ctx, areq, w)
	if d := time.Since(start); d >= deferGrace {
		ex.QueueWait = d // a deferred request waited too
	}
	idx := slices.Index(p.Classes, areq.PolicyClass())
	if idx >= 0 {
		ex.Class = areq.PolicyClass() // refusals are counted in their class too
	}
	if err != nil {
		return limiter.Request{}, err
	}
	ex.adm = areq // its lifecycle events follow it from here
	if idx < 0 {
		// The classifier chose a class the configuration lacks: its bug,
		// answered as a refusal, and the request's lifecycle ends there.
		g.log.Error("classifier chose an unknown policy class", "class", areq.PolicyClass())
		return limiter.Request{}, errUnknownClass
	}
	lr := limiter.Request{Cost: areq.SchedulingCost(), Deadline: areq.DueAt()}
	if !g.unlimited { // without a cap there are no queues
		lr.Class = idx
	}
	return lr, nil
}

// runClassifier calls Classify with the deferral timer armed, and stops
// the timer however Classify ends, a panic included.
func (g *Gate) runClassifier(ctx context.Context, req *admission.Request, w *watcher) (err error) {
	timer := time.AfterFunc(deferGrace, w.startFromTimer)
	defer func() {
		timer.Stop()
		w.stopTimer()
		if v := recover(); v != nil {
			g.log.Error("classifier panicked", "request_id", req.ID(), "panic", v)
			err = errClassifierPanicked
		}
	}()
	return g.policy.Classifier.Classify(ctx, req)
}

// event delivers one lifecycle event of a classified request.
func (g *Gate) event(ex *Exchange, kind admission.EventKind) {
	if ex.adm != nil {
		g.deliver(admission.Event{Kind: kind, Request: ex.adm})
	}
}

// deliver calls OnEvent; a panic there is logged and goes no further, so
// a broken classifier costs neither the answer nor the metrics.
func (g *Gate) deliver(e admission.Event) {
	defer func() {
		if v := recover(); v != nil {
			g.log.Error("classifier panicked on an event", "request_id", e.Request.ID(),
				"event", e.Kind.String(), "panic", v)
		}
	}()
	g.policy.Classifier.OnEvent(e)
}

// endLifecycle delivers the last event of a classified request: Completed
// when the engine served it, Aborted otherwise, with the reason.
func (g *Gate) endLifecycle(ex *Exchange) {
	if ex.adm == nil {
		return
	}
	e := admission.Event{Kind: admission.Aborted, Request: ex.adm}
	switch ex.Outcome {
	case AdmittedDirect, AdmittedQueued:
		e.Kind, e.ContextTokens = admission.Completed, ex.adm.ContextTokens()
	case CancelledQueued, CancelledRunning:
		e.Reason = admission.AbortCancelled
	case EngineError, RejectedUnavailable:
		e.Reason = admission.AbortFailed
	default:
		e.Reason = admission.AbortRejected
	}
	g.deliver(e)
}
