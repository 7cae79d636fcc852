package builtin_test

import (
	"context"
	"fmt"
	"time"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/admission/builtin"
)

// Registering the built-in classifiers and building a queue-budget one, as
// the configuration loader does for `request_classifier: {type:
// queue-budget, parameters: {max_wait_ms: 2000}}`.
func Example() {
	reg := admission.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		panic(err)
	}
	provider, err := reg.Provider("queue-budget")
	if err != nil {
		panic(err)
	}
	if _, err := provider(admission.NewParameters([]byte(`{"max_wait_ms": 0}`))); err != nil {
		fmt.Println("invalid:", err)
	}
	factory, err := provider(admission.NewParameters([]byte(`{"max_wait_ms": 2000}`)))
	if err != nil {
		panic(err)
	}
	classifier, err := factory(admission.Context{Classes: []string{"standard"}, DefaultClass: "standard"})
	if err != nil {
		panic(err)
	}

	fresh := admission.NewRequest(admission.Inputs{ID: "fresh", PolicyClass: "standard", Ingress: time.Now()})
	err = classifier.Classify(context.Background(), fresh)
	fmt.Println("fresh:", err, "due after", fresh.DueAt().Sub(fresh.IngressAt()))

	stale := admission.NewRequest(admission.Inputs{ID: "stale", PolicyClass: "standard", Ingress: time.Now().Add(-3 * time.Second)})
	err = classifier.Classify(context.Background(), stale)
	fmt.Println("stale:", admission.AsRejection(err).Message)
	// Output:
	// invalid: queue-budget: max_wait_ms must be between 1 and 60000, got 0
	// fresh: <nil> due after 2s
	// stale: Server overloaded: admission wait budget exhausted; retry later
}
