package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync/atomic"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/admission/policy"
)

// errBadParam is the fake provider's error for a parameter out of range.
var errBadParam = errors.New("max_wait_ms must be between 1 and 60000")

// fakeParams are the parameters of the "fake" type: the seed's
// queue-budget, plus a class that must be configured (as header-class's).
type fakeParams struct {
	MaxWaitMS int    `json:"max_wait_ms"`
	Class     string `json:"class"`
}

// fake is the classifier the test providers make; it remembers what its
// provider and factory were given.
type fake struct {
	typ    string
	params json.RawMessage // the "record" type's parameters
	ctx    admission.Context
}

func (*fake) Classify(context.Context, *admission.Request) error { return nil }
func (*fake) OnEvent(admission.Event)                            {}

// testRegistry returns a Registry of the test types, and the count of
// factory calls:
//   - fake: strict fakeParams; max_wait_ms 1..60000 when set; the factory
//     refuses a class that is not configured;
//   - record: any parameters, kept as JSON;
//   - nil-factory and nil-classifier: providers that break their contract.
func testRegistry() (*admission.Registry, *atomic.Int64) {
	reg := admission.NewRegistry()
	calls := new(atomic.Int64)
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(reg.Register("fake", func(p admission.Parameters) (admission.Factory, error) {
		var fp fakeParams
		if err := p.Decode(&fp); err != nil {
			return nil, err
		}
		if fp.MaxWaitMS != 0 && (fp.MaxWaitMS < 1 || fp.MaxWaitMS > 60000) {
			return nil, errBadParam
		}
		return func(ctx admission.Context) (admission.Classifier, error) {
			calls.Add(1)
			if fp.Class != "" && !slices.Contains(ctx.Classes, fp.Class) {
				return nil, fmt.Errorf("class %q is not configured", fp.Class)
			}
			return &fake{typ: "fake", ctx: ctx}, nil
		}, nil
	}))
	must(reg.Register("record", func(p admission.Parameters) (admission.Factory, error) {
		var raw json.RawMessage
		if err := p.Decode(&raw); err != nil {
			return nil, err
		}
		return func(ctx admission.Context) (admission.Classifier, error) {
			calls.Add(1)
			return &fake{typ: "record", params: raw, ctx: ctx}, nil
		}, nil
	}))
	must(reg.Register("nil-factory", func(admission.Parameters) (admission.Factory, error) { return nil, nil }))
	must(reg.Register("nil-classifier", func(admission.Parameters) (admission.Factory, error) {
		return func(admission.Context) (admission.Classifier, error) { calls.Add(1); return nil, nil }, nil
	}))
	return reg, calls
}

var (
	className = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)
	// headerName is a lower-case HTTP token (RFC 9110 §5.6.2).
	headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9a-z-]+$")
)

// invariants checks what the package documentation promises of a Config
// returned without error.
func invariants(cfg *policy.Config) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(cfg.Classes) == 0 {
		bad("no classes")
	}
	names := map[string]bool{}
	for _, c := range cfg.Classes {
		if !className.MatchString(c.Name) || names[c.Name] {
			bad("class name %q invalid or repeated", c.Name)
		}
		names[c.Name] = true
		if c.QueuePolicy != policy.FCFS || c.Quantum < 1 || c.Quantum > policy.MaxQuantum || c.QueueLimit < 0 {
			bad("class %+v out of range", c)
		}
	}
	if !names[cfg.DefaultClass] {
		bad("default class %q is not a class", cfg.DefaultClass)
	}
	if cfg.Classifier == nil || cfg.ClassifierType == "" {
		bad("no classifier (%q)", cfg.ClassifierType)
	}
	if len(cfg.CaptureHeaders) == 0 || cfg.CaptureHeaders[0] != cfg.SessionHeader {
		bad("capture headers %q do not start with the session header %q", cfg.CaptureHeaders, cfg.SessionHeader)
	}
	seen := map[string]bool{}
	for _, h := range cfg.CaptureHeaders {
		if !headerName.MatchString(h) || seen[h] {
			bad("capture header %q is not a lower-case token, or is repeated", h)
		}
		seen[h] = true
	}
	if f, ok := cfg.Classifier.(*fake); ok {
		if !slices.Equal(f.ctx.Classes, cfg.ClassNames()) || f.ctx.DefaultClass != cfg.DefaultClass {
			bad("factory context %+v, want classes %q default %q", f.ctx, cfg.ClassNames(), cfg.DefaultClass)
		}
	}
	return errors.Join(errs...)
}

// problems returns the messages errors.Join put together in err.
func problems(err error) []string {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []string{err.Error()}
	}
	var out []string
	for _, e := range j.Unwrap() {
		out = append(out, problems(e)...)
	}
	return out
}
