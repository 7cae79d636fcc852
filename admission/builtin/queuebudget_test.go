package builtin_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/admission/builtin"
)

func TestQueueBudgetParameters(t *testing.T) {
	runParamCases(t, builtin.QueueBudget, []paramCase{
		{name: "lowest", raw: `{"max_wait_ms":1}`},
		{name: "highest", raw: `{"max_wait_ms":60000}`},
		{name: "missing", raw: `{}`, want: "queue-budget: max_wait_ms is required"},
		{name: "absent parameters", raw: ``, want: "queue-budget: max_wait_ms is required"},
		{name: "null value", raw: `{"max_wait_ms":null}`, want: "queue-budget: max_wait_ms is required"},
		{name: "zero", raw: `{"max_wait_ms":0}`, want: "queue-budget: max_wait_ms must be between 1 and 60000, got 0"},
		{name: "negative", raw: `{"max_wait_ms":-5}`, want: "queue-budget: max_wait_ms must be between 1 and 60000, got -5"},
		{name: "too large", raw: `{"max_wait_ms":60001}`, want: "queue-budget: max_wait_ms must be between 1 and 60000, got 60001"},
		{name: "fraction", raw: `{"max_wait_ms":1.5}`, contains: []string{"queue-budget: ", "max_wait_ms", "1.5"}},
		{name: "string", raw: `{"max_wait_ms":"2s"}`, contains: []string{"queue-budget: ", "max_wait_ms", "string"}},
		{name: "unknown field", raw: `{"max_wait_ms":10,"max_wait":10}`, contains: []string{"queue-budget: ", `unknown field "max_wait"`}},
	})
}

func TestQueueBudgetDecisions(t *testing.T) {
	const budget = 2 * time.Second
	for _, tc := range []struct {
		name    string
		age     time.Duration // how long before Classify the request arrived
		zero    bool          // ingress not recorded
		reject  bool
		wantDue time.Duration // due_at minus now, when admitted
	}{
		{name: "fresh", age: 0, wantDue: budget},
		{name: "half spent", age: budget / 2, wantDue: budget / 2},
		{name: "1ns left", age: budget - time.Nanosecond, wantDue: time.Nanosecond},
		{name: "exactly spent", age: budget, reject: true},
		{name: "long spent", age: time.Minute, reject: true},
		{name: "arrives later than now", age: -time.Second, wantDue: budget + time.Second},
		{name: "zero ingress counts as now", zero: true, wantDue: budget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := build(t, builtin.QueueBudget, `{"max_wait_ms":2000}`)
				ingress := time.Now().Add(-tc.age)
				if tc.zero {
					ingress = time.Time{}
				}
				r := admission.NewRequest(admission.Inputs{ID: "r", PolicyClass: "standard", Ingress: ingress})
				err := c.Classify(context.Background(), r)
				if tc.reject {
					wantRejection(t, err, admission.CapacityExhausted,
						"Server overloaded: admission wait budget exhausted; retry later")
					if !r.DueAt().IsZero() {
						t.Errorf("a rejected request got due_at %v", r.DueAt())
					}
					return
				}
				if err != nil {
					t.Fatalf("Classify = %v, want admitted", err)
				}
				if got := time.Until(r.DueAt()); got != tc.wantDue {
					t.Errorf("due_at = now%+v, want now%+v", got, tc.wantDue)
				}
				if r.PolicyClass() != "standard" {
					t.Errorf("class changed to %q", r.PolicyClass())
				}
			})
		})
	}
}
