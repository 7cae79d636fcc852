// Command custom-classifier is slotgate with one more admission
// classifier: acme-queue-budget, Dynamo's plugin-guide example written for
// slotgate. It rejects a request whose wait budget, counted from its
// arrival, is already spent, and admits the others with that deadline.
//
// Build and run it like slotgate, with a policy file that names it:
//
//	go build -o bin/slotgate-acme ./examples/custom-classifier
//	bin/slotgate-acme --engine-request-limit 8 --admission-config examples/custom-classifier/admission.yaml
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/command"
)

func main() {
	reg, err := registry()
	if err != nil {
		fmt.Fprintln(os.Stderr, "slotgate-acme:", err)
		os.Exit(1)
	}
	os.Exit(command.Main(command.Options{Registry: reg}))
}

// registry is slotgate's, with acme-queue-budget added.
func registry() (*admission.Registry, error) {
	reg := command.NewRegistry()
	if err := reg.Register("acme-queue-budget", provider); err != nil {
		return nil, err
	}
	return reg, nil
}

// parameters are acme-queue-budget's; unknown fields are refused.
type parameters struct {
	MaxWaitMS int `json:"max_wait_ms"`
}

// provider validates the parameters once, at start-up.
func provider(p admission.Parameters) (admission.Factory, error) {
	var params parameters
	if err := p.Decode(&params); err != nil {
		return nil, err
	}
	if params.MaxWaitMS < 1 || params.MaxWaitMS > 60_000 {
		return nil, fmt.Errorf("max_wait_ms must be between 1 and 60000, got %d", params.MaxWaitMS)
	}
	budget := time.Duration(params.MaxWaitMS) * time.Millisecond
	return func(admission.Context) (admission.Classifier, error) {
		return &queueBudget{budget: budget, now: time.Now}, nil
	}, nil
}

// queueBudget limits a request's wait to its budget from arrival.
type queueBudget struct {
	budget time.Duration
	now    func() time.Time
}

func (q *queueBudget) Classify(_ context.Context, r *admission.Request) error {
	deadline := r.IngressAt().Add(q.budget)
	if !q.now().Before(deadline) {
		return admission.Reject(admission.CapacityExhausted, "Admission wait budget exhausted; retry later")
	}
	r.SetDueAt(deadline)
	return nil
}

func (q *queueBudget) OnEvent(admission.Event) {}
