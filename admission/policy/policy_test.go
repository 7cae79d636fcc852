package policy_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/admission/policy"
)

const file = "admission.yaml"

func class(name string, quantum, limit int) policy.Class {
	return policy.Class{Name: name, QueuePolicy: policy.FCFS, Quantum: quantum, QueueLimit: limit}
}

// passThrough is the Config of a file that configures nothing.
func passThrough() policy.Config {
	return policy.Config{Path: file, ClassifierType: policy.PassThroughType, DefaultClass: "default",
		Classes: []policy.Class{class("default", 1, 0)}, SessionHeader: "x-session-id", CaptureHeaders: []string{"x-session-id"}}
}

// with returns passThrough changed by f.
func with(f func(*policy.Config)) policy.Config {
	c := passThrough()
	f(&c)
	return c
}

// seedLike is the seed's admission.yaml without Dynamo's router-only
// fields.
const seedLike = `request_classifier:
  type: fake
  parameters:
    max_wait_ms: 2000

default_policy_class: standard_all
policy_classes:
  - name: standard_all
    queue_policy: fcfs
    quantum: 1
`

const full = `# every field
request_classifier:
  type: fake
  parameters: {max_wait_ms: 500, class: batch}
session_header: X-Conversation-ID
capture_headers: [X-Agent-ID, x-agent-id, x-conversation-id, X-Priority]
default_policy_class: interactive
policy_classes:
  - name: interactive
    queue_policy: fcfs
    quantum: 4
    queue_limit: 8
  - name: batch
    quantum: 1_000
  - name: bulk-2
    queue_limit: 0
`

func TestParseValid(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		reg        bool // use the test registry; otherwise nil
		want       policy.Config
		wantType   string // the test type that made the classifier; empty: admission.PassThrough
	}{
		{name: "empty", yaml: "", want: passThrough()},
		{name: "comments only", yaml: "# nothing yet\n\n# really\n", want: passThrough()},
		{name: "null document", yaml: "---\n", want: passThrough()},
		{name: "explicit null", yaml: "~\n", want: passThrough()},
		{name: "null fields are absent", yaml: "request_classifier:\nsession_header:\ncapture_headers:\npolicy_classes:\n",
			want: passThrough()},
		{name: "minimal", yaml: "request_classifier: {type: fake}\n", reg: true, wantType: "fake",
			want: with(func(c *policy.Config) { c.ClassifierType = "fake" })},
		{name: "seed-like", yaml: seedLike, reg: true, wantType: "fake", want: with(func(c *policy.Config) {
			c.ClassifierType, c.DefaultClass, c.Classes = "fake", "standard_all", []policy.Class{class("standard_all", 1, 0)}
		})},
		{name: "full", yaml: full, reg: true, wantType: "fake", want: policy.Config{Path: file, ClassifierType: "fake",
			DefaultClass:  "interactive",
			Classes:       []policy.Class{class("interactive", 4, 8), class("batch", 1000, 0), class("bulk-2", 1, 0)},
			SessionHeader: "x-conversation-id", CaptureHeaders: []string{"x-conversation-id", "x-agent-id", "x-priority"}}},
		{name: "default class names the only class", yaml: "default_policy_class: gold\n",
			want: with(func(c *policy.Config) { c.DefaultClass, c.Classes = "gold", []policy.Class{class("gold", 1, 0)} })},
		{name: "empty class list", yaml: "policy_classes: []\ncapture_headers: []\n", want: passThrough()},
		{name: "session header joins capture headers", yaml: "session_header: X-S\ncapture_headers: [x-a, X-S]\n",
			want: with(func(c *policy.Config) { c.SessionHeader, c.CaptureHeaders = "x-s", []string{"x-s", "x-a"} })},
		{name: "null class fields take defaults", yaml: "default_policy_class: a\npolicy_classes:\n  - name: a\n    quantum:\n    queue_policy:\n",
			want: with(func(c *policy.Config) { c.DefaultClass, c.Classes = "a", []policy.Class{class("a", 1, 0)} })},
		{name: "anchors and aliases", yaml: "default_policy_class: &d a\npolicy_classes:\n  - {name: *d, quantum: &q 7}\n  - {name: b, quantum: *q}\n",
			want: with(func(c *policy.Config) {
				c.DefaultClass, c.Classes = "a", []policy.Class{class("a", 7, 0), class("b", 7, 0)}
			})},
		{name: "quantum bounds", yaml: "default_policy_class: a\npolicy_classes: [{name: a, quantum: 1}, {name: b, quantum: 1000000, queue_limit: 2147483647}]\n",
			want: with(func(c *policy.Config) {
				c.DefaultClass = "a"
				c.Classes = []policy.Class{class("a", 1, 0), class("b", 1000000, 2147483647)}
			})},
		{name: "pass-through without a registry", yaml: "request_classifier: {type: pass-through, parameters: {}}\n",
			want: passThrough()},
		{name: "pass-through with a registry", yaml: "request_classifier:\n  type: pass-through\n", reg: true, want: passThrough()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reg *admission.Registry
			if tc.reg {
				reg, _ = testRegistry()
			}
			cfg, err := policy.Parse(file, []byte(tc.yaml), reg)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if err := invariants(cfg); err != nil {
				t.Error(err)
			}
			checkClassifier(t, cfg.Classifier, tc.wantType)
			got := *cfg
			got.Classifier = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func checkClassifier(t *testing.T, c admission.Classifier, wantType string) {
	t.Helper()
	f, ok := c.(*fake)
	switch {
	case wantType == "" && c != (admission.PassThrough{}):
		t.Errorf("classifier %#v, want admission.PassThrough", c)
	case wantType != "" && (!ok || f.typ != wantType):
		t.Errorf("classifier %#v, want one of type %q", c, wantType)
	}
}

// TestParameters checks the YAML parameters reach the provider as the
// equivalent JSON: numbers stay numbers, and keys become strings.
func TestParameters(t *testing.T) {
	for _, tc := range []struct{ name, params, want string }{
		{"absent", "", `{}`},
		{"null", "  parameters:\n", `{}`},
		{"empty", "  parameters: {}\n", `{}`},
		{"scalars", "  parameters:\n    max_wait_ms: 2000\n    ratio: 0.5\n    on: true\n    name: x\n    none: ~\n    hex: 0x10\n",
			`{"hex":16,"max_wait_ms":2000,"name":"x","none":null,"on":true,"ratio":0.5}`},
		{"nested", "  parameters:\n    tiers: [{header: x-priority, values: [1, two]}]\n    map: {1: a, true: b}\n",
			`{"map":{"1":"a","true":"b"},"tiers":[{"header":"x-priority","values":[1,"two"]}]}`},
		{"merge key", "  parameters:\n    base: &b {a: 1}\n    more:\n      <<: *b\n      c: 2\n",
			`{"base":{"a":1},"more":{"a":1,"c":2}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, _ := testRegistry()
			cfg, err := policy.Parse(file, []byte("request_classifier:\n  type: record\n"+tc.params), reg)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(cfg.Classifier.(*fake).params); got != tc.want {
				t.Errorf("parameters %s, want %s", got, tc.want)
			}
		})
	}
}

// TestFactoryCalledOnce checks the factory is called once for a valid
// file, and never when something else is wrong (it would see the wrong
// classes).
func TestFactoryCalledOnce(t *testing.T) {
	for _, tc := range []struct {
		yaml  string
		calls int64
	}{
		{seedLike, 1},
		{seedLike + "  - name: Bad\n", 0},
		{seedLike + "session_header: a b\n", 0},
	} {
		reg, calls := testRegistry()
		_, err := policy.Parse(file, []byte(tc.yaml), reg)
		if got := calls.Load(); got != tc.calls || (err == nil) != (tc.calls == 1) {
			t.Errorf("%q: %d factory calls, error %v; want %d", tc.yaml, got, err, tc.calls)
		}
	}
}

func TestProviderErrorIsWrapped(t *testing.T) {
	reg, _ := testRegistry()
	_, err := policy.Parse(file, []byte("request_classifier:\n  type: fake\n  parameters: {max_wait_ms: 60001}\n"), reg)
	if !errors.Is(err, errBadParam) {
		t.Errorf("error %v does not wrap the provider's", err)
	}
}

func TestPassThrough(t *testing.T) {
	want := with(func(c *policy.Config) { c.Path = "" })
	got := *policy.PassThrough()
	if got.Classifier != (admission.PassThrough{}) {
		t.Errorf("classifier %#v", got.Classifier)
	}
	got.Classifier = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PassThrough() = %+v, want %+v", got, want)
	}
	if err := invariants(policy.PassThrough()); err != nil {
		t.Error(err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	reg, _ := testRegistry()

	good := write("good.yaml", seedLike)
	cfg, err := policy.Load(good, reg)
	if err != nil || cfg.Path != good || cfg.ClassifierType != "fake" {
		t.Errorf("Load(good) = %+v, %v", cfg, err)
	}

	for _, tc := range []struct{ name, path, want string }{
		{"missing", filepath.Join(dir, "none.yaml"), "none.yaml: no such file"},
		{"too large", write("big.yaml", "#"+strings.Repeat("x", policy.MaxSize)), "big.yaml: admission config is larger than 1048576 bytes"},
		{"invalid", write("bad.yaml", "\n\nquantum: 1\n"), "bad.yaml:3: quantum: unknown field"},
	} {
		if _, err := policy.Load(tc.path, reg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Load error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	// Exactly MaxSize bytes is accepted.
	if _, err := policy.Load(write("max.yaml", "#"+strings.Repeat("x", policy.MaxSize-2)+"\n"), reg); err != nil {
		t.Errorf("a file of MaxSize bytes: %v", err)
	}
}
