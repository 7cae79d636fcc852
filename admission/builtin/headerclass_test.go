package builtin_test

import (
	"context"
	"testing"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/admission/builtin"
)

func TestHeaderClassParameters(t *testing.T) {
	runParamCases(t, builtin.HeaderClass, []paramCase{
		{name: "valid", raw: `{"header":"x-priority","allow":["interactive","batch"],"default":"standard"}`},
		{name: "token characters", raw: `{"header":"x-tier_1.b~","allow":["batch"],"default":"batch"}`},
		{name: "nothing", raw: `{}`, want: "header-class: header is required\n" +
			"header-class: allow must list at least one policy class\n" +
			"header-class: default is required"},
		{name: "upper-case header", raw: `{"header":"X-Priority","allow":["batch"],"default":"batch"}`,
			want: `header-class: header must be a lower-case header name, got "X-Priority"`},
		{name: "space in header", raw: `{"header":"x priority","allow":["batch"],"default":"batch"}`,
			want: `header-class: header must be a lower-case header name, got "x priority"`},
		{name: "colon in header", raw: `{"header":"x-priority:","allow":["batch"],"default":"batch"}`,
			want: `header-class: header must be a lower-case header name, got "x-priority:"`},
		{name: "empty allow", raw: `{"header":"x-priority","allow":[],"default":"batch"}`,
			want: "header-class: allow must list at least one policy class"},
		{name: "empty name in allow", raw: `{"header":"x-priority","allow":["batch",""],"default":"batch"}`,
			want: "header-class: allow[1] must not be empty"},
		{name: "repeated name in allow", raw: `{"header":"x-priority","allow":["batch","interactive","batch"],"default":"batch"}`,
			want: `header-class: allow lists "batch" more than once`},
		{name: "allow not a list", raw: `{"header":"x-priority","allow":"batch","default":"batch"}`,
			contains: []string{"header-class: ", "allow", "string"}},
		{name: "unknown field", raw: `{"header":"x-priority","allow":["batch"],"default":"batch","deny":["x"]}`,
			contains: []string{"header-class: ", `unknown field "deny"`}},
	})
}

func TestHeaderClassFactory(t *testing.T) {
	const configured = `(configured: ["standard" "interactive" "batch"])`
	for _, tc := range []struct {
		name string
		raw  string
		want string
	}{
		{name: "all configured", raw: `{"header":"x-priority","allow":["interactive","batch"],"default":"standard"}`},
		{name: "unknown allowed", raw: `{"header":"x-priority","allow":["interactive","gold","silver"],"default":"standard"}`,
			want: `header-class: allow names policy classes that are not configured: ["gold" "silver"] ` + configured},
		{name: "unknown default", raw: `{"header":"x-priority","allow":["batch"],"default":"bronze"}`,
			want: `header-class: default names a policy class that is not configured: "bronze" ` + configured},
		{name: "both unknown", raw: `{"header":"x-priority","allow":["gold"],"default":"bronze"}`,
			want: `header-class: allow names policy classes that are not configured: ["gold"] ` + configured + "\n" +
				`header-class: default names a policy class that is not configured: "bronze" ` + configured},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := provide(t, builtin.HeaderClass, tc.raw)
			if err != nil {
				t.Fatalf("provider: %v", err)
			}
			c, err := f(classes)
			switch {
			case tc.want == "" && (err != nil || c == nil):
				t.Fatalf("factory = %v, %v; want a classifier", c, err)
			case tc.want != "" && err == nil:
				t.Fatalf("factory succeeded, want %q", tc.want)
			case tc.want != "" && err.Error() != tc.want:
				t.Errorf("factory error:\n got %q\nwant %q", err, tc.want)
			}
		})
	}
}

func TestHeaderClassDecisions(t *testing.T) {
	c := build(t, builtin.HeaderClass, `{"header":"x-priority","allow":["interactive","batch"],"default":"standard"}`)
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    string
	}{
		{name: "allowed", headers: map[string]string{"x-priority": "batch"}, want: "batch"},
		{name: "other allowed", headers: map[string]string{"x-priority": "interactive"}, want: "interactive"},
		{name: "absent", headers: nil, want: "standard"},
		{name: "not allowed", headers: map[string]string{"x-priority": "gold"}, want: "standard"},
		{name: "empty", headers: map[string]string{"x-priority": ""}, want: "standard"},
		{name: "case differs", headers: map[string]string{"x-priority": "Batch"}, want: "standard"},
		{name: "other header", headers: map[string]string{"x-tier": "batch"}, want: "standard"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The requested class is "requested", so a classifier that left it
			// alone would be caught.
			r := admission.NewRequest(admission.Inputs{ID: "r", Headers: tc.headers, PolicyClass: "requested"})
			if err := c.Classify(context.Background(), r); err != nil {
				t.Fatalf("Classify = %v; header-class never rejects", err)
			}
			if r.PolicyClass() != tc.want {
				t.Errorf("class = %q, want %q", r.PolicyClass(), tc.want)
			}
			if !r.DueAt().IsZero() {
				t.Errorf("due_at set to %v", r.DueAt())
			}
		})
	}
}

func TestHeaderClassIgnoresEvents(t *testing.T) {
	c := build(t, builtin.HeaderClass, `{"header":"x-priority","allow":["batch"],"default":"standard"}`)
	r := admission.NewRequest(admission.Inputs{Headers: map[string]string{"x-priority": "batch"}})
	c.OnEvent(admission.Event{Kind: admission.Completed, Request: r})
	if err := c.Classify(context.Background(), r); err != nil || r.PolicyClass() != "batch" {
		t.Errorf("after an event: %v, class %q", err, r.PolicyClass())
	}
}

// TestHeaderClassNamesItsHeader: slotgate learns which header to capture
// from the classifier itself.
func TestHeaderClassNamesItsHeader(t *testing.T) {
	reg := admission.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	prov, err := reg.Provider(builtin.HeaderClass)
	if err != nil {
		t.Fatal(err)
	}
	factory, err := prov(admission.NewParameters([]byte(`{"header":"x-priority","allow":["a"],"default":"a"}`)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := factory(admission.Context{Classes: []string{"a"}, DefaultClass: "a"})
	if err != nil {
		t.Fatal(err)
	}
	hr, ok := c.(admission.HeaderReader)
	if !ok || len(hr.Headers()) != 1 || hr.Headers()[0] != "x-priority" {
		t.Errorf("header-class does not name x-priority as its header")
	}
}
