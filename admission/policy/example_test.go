package policy_test

import (
	"context"
	"fmt"
	"log"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/admission/policy"
)

// budget stands for a real classifier, such as admission/builtin's.
type budget struct{ maxWaitMS int }

func (budget) Classify(context.Context, *admission.Request) error { return nil }
func (budget) OnEvent(admission.Event)                            {}

func ExampleLoad() {
	reg := admission.NewRegistry()
	err := reg.Register("queue-budget", func(p admission.Parameters) (admission.Factory, error) {
		var params struct {
			MaxWaitMS int `json:"max_wait_ms"`
		}
		if err := p.Decode(&params); err != nil {
			return nil, err
		}
		return func(admission.Context) (admission.Classifier, error) { return budget{params.MaxWaitMS}, nil }, nil
	})
	if err != nil {
		log.Fatal(err)
	}

	cfg, err := policy.Load("testdata/admission.yaml", reg)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %+v\n", cfg.ClassifierType, cfg.Classifier)
	fmt.Println("default:", cfg.DefaultClass)
	for _, c := range cfg.Classes {
		fmt.Printf("%s: %s, quantum %d, limit %d\n", c.Name, c.QueuePolicy, c.Quantum, c.QueueLimit)
	}
	fmt.Println("headers:", cfg.CaptureHeaders)
	// Output:
	// queue-budget {maxWaitMS:2000}
	// default: interactive
	// interactive: fcfs, quantum 4, limit 0
	// batch: fcfs, quantum 1, limit 16
	// headers: [x-session-id x-priority]
}

func ExampleParse_errors() {
	_, err := policy.Parse("admission.yaml", []byte(`default_policy_class: interactive
policy_classes:
  - name: interactive
    quantum: 0
  - name: batch
    queue_policy: lifo
`), nil)
	fmt.Println(err)
	// Output:
	// admission.yaml:4: policy_classes[0].quantum: must be from 1 to 1000000, got 0
	// admission.yaml:6: policy_classes[1].queue_policy: must be "fcfs", got "lifo"
}
