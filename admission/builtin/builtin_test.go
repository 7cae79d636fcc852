package builtin_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/admission/builtin"
)

// classes is the configuration the tests' factories see.
var classes = admission.Context{Classes: []string{"standard", "interactive", "batch"}, DefaultClass: "standard"}

func newRegistry(t *testing.T) *admission.Registry {
	t.Helper()
	reg := admission.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return reg
}

// provide runs typeName's provider on raw parameters.
func provide(t *testing.T, typeName, raw string) (admission.Factory, error) {
	t.Helper()
	p, err := newRegistry(t).Provider(typeName)
	if err != nil {
		t.Fatalf("Provider(%q): %v", typeName, err)
	}
	return p(admission.NewParameters([]byte(raw)))
}

// build returns a classifier of typeName with raw parameters, failing the
// test on any error.
func build(t *testing.T, typeName, raw string) admission.Classifier {
	t.Helper()
	f, err := provide(t, typeName, raw)
	if err != nil {
		t.Fatalf("%s provider(%s): %v", typeName, raw, err)
	}
	c, err := f(classes)
	if err != nil {
		t.Fatalf("%s factory: %v", typeName, err)
	}
	return c
}

// paramCase is one row of a provider's parameter table: valid when want
// and contains are both empty; otherwise the error must equal want (when
// set) and contain every string of contains.
type paramCase struct {
	name     string
	raw      string
	want     string
	contains []string
}

func runParamCases(t *testing.T, typeName string, cases []paramCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := provide(t, typeName, tc.raw)
			valid := tc.want == "" && len(tc.contains) == 0
			switch {
			case valid && err != nil:
				t.Fatalf("provider(%s) = %v, want success", tc.raw, err)
			case valid && f == nil:
				t.Fatalf("provider(%s) returned a nil factory", tc.raw)
			case valid:
				return
			case err == nil:
				t.Fatalf("provider(%s) succeeded, want an error", tc.raw)
			}
			if tc.want != "" && err.Error() != tc.want {
				t.Errorf("provider(%s) error:\n got %q\nwant %q", tc.raw, err, tc.want)
			}
			for _, s := range tc.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("provider(%s) error %q does not contain %q", tc.raw, err, s)
				}
			}
		})
	}
}

// wantRejection fails unless err is a Rejection of kind with message.
func wantRejection(t *testing.T, err error, kind admission.RejectKind, message string) {
	t.Helper()
	var rej *admission.Rejection
	if !errors.As(err, &rej) || rej.Kind != kind || rej.Message != message {
		t.Fatalf("error = %#v, want a Rejection{%d, %q}", err, kind, message)
	}
}

func TestRegister(t *testing.T) {
	reg := newRegistry(t)
	want := []string{builtin.HeaderClass, builtin.PassThrough, builtin.QueueBudget, builtin.SessionGate}
	if got := reg.Types(); !slices.Equal(got, want) {
		t.Errorf("Types() = %q, want %q", got, want)
	}
	err := builtin.Register(reg)
	if !errors.Is(err, admission.ErrDuplicate) {
		t.Errorf("second Register = %v, want ErrDuplicate", err)
	}
}

func TestRegisterNameTaken(t *testing.T) {
	reg := admission.NewRegistry()
	mine := func(admission.Parameters) (admission.Factory, error) { return nil, errors.New("mine") }
	if err := reg.Register(builtin.SessionGate, mine); err != nil {
		t.Fatal(err)
	}
	err := builtin.Register(reg)
	if !errors.Is(err, admission.ErrDuplicate) || !strings.Contains(err.Error(), `"session-gate"`) {
		t.Errorf("Register = %v, want ErrDuplicate naming session-gate", err)
	}
}

func TestPassThroughParameters(t *testing.T) {
	runParamCases(t, builtin.PassThrough, []paramCase{
		{name: "absent", raw: ""},
		{name: "empty object", raw: "{}"},
		{name: "null", raw: "null"},
		{name: "unknown field", raw: `{"max_wait_ms":5}`, contains: []string{"pass-through: ", `unknown field "max_wait_ms"`}},
		{name: "not an object", raw: `[1]`, contains: []string{"pass-through: ", "cannot unmarshal array"}},
		{name: "trailing data", raw: `{} {}`, want: "pass-through: trailing data after the parameters"},
	})
}

func TestPassThroughAdmitsUnchanged(t *testing.T) {
	c := build(t, builtin.PassThrough, "")
	if _, ok := c.(admission.PassThrough); !ok {
		t.Errorf("classifier is %T, want admission.PassThrough", c)
	}
	r := admission.NewRequest(admission.Inputs{ID: "r", Session: "s", PolicyClass: "standard", InputTokens: 7})
	if err := c.Classify(context.Background(), r); err != nil {
		t.Fatalf("Classify = %v", err)
	}
	if r.PolicyClass() != "standard" || !r.DueAt().IsZero() || r.SchedulingCost() != 7 {
		t.Errorf("request changed: class %q due %v cost %d", r.PolicyClass(), r.DueAt(), r.SchedulingCost())
	}
}
