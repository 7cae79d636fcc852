package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/limiter"
)

// DefaultClass is the policy class of every request when no admission
// policy is configured.
const DefaultClass = "default"

// Admission is the admission policy the proxy applies before queueing.
type Admission struct {
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

func (a *Admission) validate() error {
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
func (a *Admission) matches(s limiter.Stats) error {
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

// classIndex returns the limiter class of a policy class name.
func (a *Admission) classIndex(name string) (int, bool) {
	i := slices.Index(a.Classes, name)
	return i, i >= 0
}

// deferGrace is how long a classifier may take before the proxy starts
// reading the request's body, so that a client that leaves while its
// request is deferred is seen (net/http notices a closed connection only
// once the body is read). Classifiers that decide at once never pay for
// the read.
const deferGrace = time.Millisecond

// classify runs the classifier for r. It returns the limiter request to
// queue it with; an error when the classifier refused r or ctx ended while
// it deferred; or, with rec.outcome set, having answered r itself.
func (p *Proxy) classify(ctx context.Context, rec *recorder, r *http.Request, lb *lazyBody) (limiter.Request, error) {
	a := p.admission
	if a == nil {
		return limiter.Request{}, nil
	}
	req := admission.NewRequest(p.inputs(rec, r))
	start := time.Now()
	err := p.runClassifier(ctx, req, lb)
	if d := time.Since(start); d >= deferGrace {
		rec.queueWait = d // a deferred request waited too
	}
	idx, ok := a.classIndex(req.PolicyClass())
	if ok {
		rec.class = req.PolicyClass() // refusals are counted in their class too
	}
	if err != nil {
		return limiter.Request{}, err
	}
	if !ok {
		// The classifier chose a class the configuration lacks: its bug,
		// answered as a refusal, and the request's lifecycle ends there.
		rec.adm = req
		p.log.Error("classifier chose an unknown policy class", zap.String("class", req.PolicyClass()))
		return limiter.Request{}, errUnknownClass
	}
	rec.adm = req
	lr := limiter.Request{Cost: req.SchedulingCost(), Deadline: req.DueAt()}
	if !p.unlimited { // without a cap there are no queues
		lr.Class = idx
	}
	return lr, nil
}

// errUnknownClass answers a request whose classifier chose a policy
// class that is not configured.
var errUnknownClass = errors.New("unknown policy class")

// errClassifierPanicked answers a request whose classifier panicked: a
// refusal by policy, the panic logged, the process unharmed.
var errClassifierPanicked = errors.New("classifier panicked")

// runClassifier calls Classify with the deferral timer armed, and stops
// the timer however Classify ends, a panic included.
func (p *Proxy) runClassifier(ctx context.Context, req *admission.Request, lb *lazyBody) (err error) {
	timer := time.AfterFunc(deferGrace, lb.startDeferred)
	defer func() {
		timer.Stop()
		lb.stopTimer()
		if v := recover(); v != nil {
			p.log.Error("classifier panicked", zap.String("request_id", req.ID()), zap.Any("panic", v))
			err = errClassifierPanicked
		}
	}()
	return p.admission.Classifier.Classify(ctx, req)
}

// inputs gathers what the classifier may read of r.
func (p *Proxy) inputs(rec *recorder, r *http.Request) admission.Inputs {
	a := p.admission
	in := admission.Inputs{ID: rec.id, PolicyClass: a.DefaultClass, Ingress: rec.start}
	if a.SessionHeader != "" {
		in.Session = r.Header.Get(a.SessionHeader)
	}
	if len(a.CaptureHeaders) > 0 {
		in.Headers = make(map[string]string, len(a.CaptureHeaders))
		for _, h := range a.CaptureHeaders {
			if v := r.Header.Values(h); len(v) > 0 {
				in.Headers[h] = strings.Join(v, ",")
			}
		}
	}
	if r.ContentLength > 0 {
		// Before the body is read, its declared size is all there is:
		// about 4 bytes a token, an upper bound for a JSON body.
		in.InputTokens, in.InputTokensKnown = int(r.ContentLength/4), true
	}
	return in
}

// refuseClassified answers a request its classifier did not admit: the
// classifier's rejection; or, when the request's context had ended while
// the classifier deferred it (ended, with its cause; gone when the client
// had left), what ended it.
func (p *Proxy) refuseClassified(rec *recorder, err error, ended bool, cause error, gone bool) {
	switch {
	case errors.Is(err, errUnknownClass):
		p.refuse(rec, &p.answers.policy, RejectedPolicy)
		return
	case ended:
		p.refuseAdmission(rec, context.Canceled, cause, gone)
		return
	}
	rej := admission.AsRejection(err)
	if rej.Kind == admission.RateLimited {
		a := p.answers.rendered(http.StatusTooManyRequests, "RateLimited", rej.Message, "rate_limited")
		p.refuse(rec, &a, RejectedRateLimited)
		return
	}
	a := p.answers.rendered(p.answers.overloadStatus, "Overloaded", rej.Message, "policy")
	p.refuse(rec, &a, RejectedPolicy)
}

// event delivers one lifecycle event of a classified request.
func (p *Proxy) event(rec *recorder, kind admission.EventKind) {
	if rec.adm == nil || p.admission == nil {
		return
	}
	p.deliver(admission.Event{Kind: kind, Request: rec.adm})
}

// deliver calls OnEvent; a panic there is logged and goes no further, so
// a broken classifier costs neither the answer nor the metrics.
func (p *Proxy) deliver(e admission.Event) {
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("classifier panicked on an event", zap.String("request_id", e.Request.ID()),
				zap.Stringer("event", e.Kind), zap.Any("panic", v))
		}
	}()
	p.admission.Classifier.OnEvent(e)
}

// endLifecycle delivers the last event of a classified request: Completed
// when the engine served it, Aborted otherwise, with the reason.
func (p *Proxy) endLifecycle(rec *recorder) {
	if rec.adm == nil || p.admission == nil {
		return
	}
	e := admission.Event{Kind: admission.Aborted, Request: rec.adm}
	switch rec.outcome {
	case AdmittedDirect, AdmittedQueued:
		e.Kind, e.ContextTokens = admission.Completed, rec.adm.ContextTokens()
	case CancelledQueued, CancelledRunning:
		e.Reason = admission.AbortCancelled
	case EngineError, RejectedUnavailable:
		e.Reason = admission.AbortFailed
	default:
		e.Reason = admission.AbortRejected
	}
	p.deliver(e)
}
