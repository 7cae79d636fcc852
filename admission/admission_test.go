package admission_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/admission"
)

func TestRequestDefaultsAndDecisions(t *testing.T) {
	in := admission.Inputs{ID: "r1", Session: "s", Headers: map[string]string{"x-priority": "batch"},
		InputTokens: 300, InputTokensKnown: true, PolicyClass: "standard", Ingress: time.Unix(100, 0)}
	r := admission.NewRequest(in)
	if r.ID() != "r1" || r.Session() != "s" || r.PolicyClass() != "standard" || r.SchedulingCost() != 300 ||
		!r.DueAt().IsZero() || r.Hint() != "" || !r.IngressAt().Equal(time.Unix(100, 0)) {
		t.Errorf("defaults: id %q session %q class %q cost %d due %v", r.ID(), r.Session(), r.PolicyClass(), r.SchedulingCost(), r.DueAt())
	}
	if v, ok := r.Header("x-priority"); !ok || v != "batch" {
		t.Errorf("Header = %q, %v", v, ok)
	}
	if _, ok := r.Header("x-other"); ok {
		t.Error("an uncaptured header was found")
	}
	r.SetPolicyClass("batch")
	r.SetDueAt(time.Unix(200, 0))
	r.SetSchedulingCost(0) // at least 1
	r.SetHint("rank=1")
	r.SetContextTokens(42)
	if r.PolicyClass() != "batch" || !r.DueAt().Equal(time.Unix(200, 0)) || r.SchedulingCost() != 1 || r.Hint() != "rank=1" ||
		r.ContextTokens() != 42 {
		t.Errorf("decisions not kept: %q %v %d %q %d", r.PolicyClass(), r.DueAt(), r.SchedulingCost(), r.Hint(), r.ContextTokens())
	}
	if r := admission.NewRequest(admission.Inputs{}); r.SchedulingCost() != 1 {
		t.Errorf("unknown input: cost %d, want 1", r.SchedulingCost())
	}
}

func TestAsRejection(t *testing.T) {
	rl := admission.Reject(admission.RateLimited, "slow down")
	for _, tc := range []struct {
		err      error
		kind     admission.RejectKind
		contains string
	}{
		{rl, admission.RateLimited, "slow down"},
		{fmt.Errorf("wrapped: %w", rl), admission.RateLimited, "slow down"},
		{admission.Reject(admission.CapacityExhausted, "full"), admission.CapacityExhausted, "full"},
		{errors.New("database password wrong"), admission.CapacityExhausted, "admission policy"},
		{&admission.Rejection{Kind: 99, Message: "odd"}, admission.CapacityExhausted, "admission policy"},
		{admission.Reject(admission.RateLimited, ""), admission.RateLimited, "rate limited"},
		{admission.Reject(admission.CapacityExhausted, ""), admission.CapacityExhausted, "admission policy"},
	} {
		got := admission.AsRejection(tc.err)
		if got.Kind != tc.kind || !strings.Contains(got.Message, tc.contains) {
			t.Errorf("AsRejection(%v) = %+v, want kind %d with %q", tc.err, got, tc.kind, tc.contains)
		}
	}
}

func TestParametersDecodeStrictly(t *testing.T) {
	type params struct {
		MaxWaitMS int `json:"max_wait_ms"`
	}
	for _, tc := range []struct {
		raw     string
		want    int
		wantErr string
	}{
		{`{"max_wait_ms":2000}`, 2000, ""},
		{``, 0, ""},
		{`{"max_wait_ms":1,"extra":2}`, 0, `unknown field "extra"`},
		{`{"max_wait_ms":"x"}`, 0, "cannot unmarshal"},
		{`{"max_wait_ms":1} {}`, 0, "trailing data"},
	} {
		var p params
		err := admission.NewParameters([]byte(tc.raw)).Decode(&p)
		if tc.wantErr == "" && (err != nil || p.MaxWaitMS != tc.want) {
			t.Errorf("Decode(%s) = %+v, %v", tc.raw, p, err)
		}
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("Decode(%s) error %v, want it to contain %q", tc.raw, err, tc.wantErr)
		}
	}
}

func TestRegistry(t *testing.T) {
	reg := admission.NewRegistry()
	p := func(admission.Parameters) (admission.Factory, error) {
		return func(admission.Context) (admission.Classifier, error) { return admission.PassThrough{}, nil }, nil
	}
	if err := reg.Register("b-type", p); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register("a-type", p); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register("a-type", p); !errors.Is(err, admission.ErrDuplicate) {
		t.Errorf("second registration: %v, want ErrDuplicate", err)
	}
	for _, bad := range []struct {
		name string
		p    admission.Provider
	}{{"", p}, {"x", nil}} {
		if err := reg.Register(bad.name, bad.p); err == nil {
			t.Errorf("Register(%q, %v) succeeded", bad.name, bad.p != nil)
		}
	}
	if got := reg.Types(); len(got) != 2 || got[0] != "a-type" || got[1] != "b-type" {
		t.Errorf("Types = %v", got)
	}
	if _, err := reg.Provider("a-type"); err != nil {
		t.Error(err)
	}
	if _, err := reg.Provider("c-type"); err == nil || !strings.Contains(err.Error(), "a-type b-type") {
		t.Errorf("unknown type error %v, want it to list the registered ones", err)
	}
}

func TestEventStrings(t *testing.T) {
	for k, want := range map[admission.EventKind]string{admission.Sent: "sent", admission.Responding: "responding",
		admission.Completed: "completed", admission.Aborted: "aborted", 9: "EventKind(9)"} {
		if k.String() != want {
			t.Errorf("%d.String() = %q, want %q", k, k.String(), want)
		}
	}
	for r, want := range map[admission.AbortReason]string{admission.AbortRejected: "rejected",
		admission.AbortCancelled: "cancelled", admission.AbortFailed: "failed", admission.NotAborted: ""} {
		if r.String() != want {
			t.Errorf("%d.String() = %q, want %q", r, r.String(), want)
		}
	}
}
