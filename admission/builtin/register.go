package builtin

import (
	"errors"
	"fmt"

	"github.com/slotgate/slotgate/admission"
)

// The type names under which Register adds the built-in classifiers.
const (
	PassThrough = "pass-through"
	QueueBudget = "queue-budget"
	SessionGate = "session-gate"
	HeaderClass = "header-class"
)

// Register adds the four built-in providers to r. It fails, having added
// those before the failure, when a name is already registered (the error
// wraps admission.ErrDuplicate).
func Register(r *admission.Registry) error {
	for _, p := range []struct {
		name string
		p    admission.Provider
	}{
		{PassThrough, passThroughProvider},
		{QueueBudget, queueBudgetProvider},
		{SessionGate, sessionGateProvider},
		{HeaderClass, headerClassProvider},
	} {
		if err := r.Register(p.name, p.p); err != nil {
			return fmt.Errorf("builtin: %w", err)
		}
	}
	return nil
}

// passThroughProvider accepts no parameters: an empty value, null or {}.
func passThroughProvider(p admission.Parameters) (admission.Factory, error) {
	var none struct{}
	if err := decode(PassThrough, p, &none); err != nil {
		return nil, err
	}
	return func(admission.Context) (admission.Classifier, error) {
		return admission.PassThrough{}, nil
	}, nil
}

// decode decodes p into v strictly, the error prefixed with typeName.
func decode(typeName string, p admission.Parameters, v any) error {
	if err := p.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", typeName, err)
	}
	return nil
}

// problems collects a provider's invalid parameters, so that all are
// reported at once.
type problems struct {
	typeName string
	errs     []error
}

func (ps *problems) add(format string, args ...any) {
	ps.errs = append(ps.errs, fmt.Errorf("%s: %s", ps.typeName, fmt.Sprintf(format, args...)))
}

// intIn checks an integer parameter: nil (absent) is an error when
// required, or def otherwise; a value outside [lo, hi] is an error naming
// the value. hi == noMax means no upper bound.
func (ps *problems) intIn(name string, v *int64, required bool, def, lo, hi int64) int64 {
	switch {
	case v == nil && required:
		ps.add("%s is required", name)
		return 0
	case v == nil:
		return def
	case hi == noMax && *v < lo:
		ps.add("%s must be at least %d, got %d", name, lo, *v)
		return 0
	case hi != noMax && (*v < lo || *v > hi):
		ps.add("%s must be between %d and %d, got %d", name, lo, hi, *v)
		return 0
	}
	return *v
}

// noMax is intIn's hi for a parameter without an upper bound; it is also
// the largest value an int holds, so such a parameter always fits one.
const noMax = int64(^uint(0) >> 1)

func (ps *problems) err() error { return errors.Join(ps.errs...) }

// noEvents is embedded by the classifiers that keep no lifecycle state.
type noEvents struct{}

func (noEvents) OnEvent(admission.Event) {}
