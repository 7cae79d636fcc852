package builtin

import (
	"context"
	"time"

	"github.com/slotgate/slotgate/admission"
)

// msgBudgetSpent is the client's answer when a request's queue budget is
// spent before it was classified.
const msgBudgetSpent = "Server overloaded: admission wait budget exhausted; retry later"

type queueBudgetParams struct {
	MaxWaitMS *int64 `json:"max_wait_ms"`
}

// queueBudgetProvider validates max_wait_ms: required, 1..60000.
func queueBudgetProvider(p admission.Parameters) (admission.Factory, error) {
	var params queueBudgetParams
	if err := decode(QueueBudget, p, &params); err != nil {
		return nil, err
	}
	ps := problems{typeName: QueueBudget}
	ms := ps.intIn("max_wait_ms", params.MaxWaitMS, true, 0, 1, 60000)
	if err := ps.err(); err != nil {
		return nil, err
	}
	budget := time.Duration(ms) * time.Millisecond
	return func(admission.Context) (admission.Classifier, error) {
		return &queueBudget{budget: budget}, nil
	}, nil
}

// queueBudget admits a request with the deadline ingress+budget, or
// rejects it when that deadline has already come.
type queueBudget struct {
	noEvents
	budget time.Duration
}

// Classify rejects r with CapacityExhausted when now is at or past its
// ingress plus the budget; otherwise it sets r's queue deadline to that
// instant and admits it. A zero ingress time counts as now, so a request
// whose ingress was not recorded is not rejected for it.
func (q *queueBudget) Classify(_ context.Context, r *admission.Request) error {
	now := time.Now()
	ingress := r.IngressAt()
	if ingress.IsZero() {
		ingress = now
	}
	deadline := ingress.Add(q.budget)
	if !now.Before(deadline) {
		return admission.Reject(admission.CapacityExhausted, msgBudgetSpent)
	}
	r.SetDueAt(deadline)
	return nil
}
