package policy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/admission/policy"
)

// seedVerbatim is the seed's admission.yaml as Dynamo's documentation
// gives it: its router-only fields are unknown to slotgate.
const seedVerbatim = `request_classifier:
  type: fake
  parameters:
    max_wait_ms: 2000

default_policy_family: standard
uncached_isl_buckets:
  - min_tokens: 0
    bucket: all
policy_classes:
  - name: standard_all
    policy_family: standard
    cache_bucket: all
    queue_policy: fcfs
    quantum: 1
    prefill_busy_threshold_frac: 1.0
`

// twoClasses puts a bad quantum on line 12, as in the package's example
// message.
const twoClasses = `# Two classes.
request_classifier:
  type: fake
default_policy_class: interactive
policy_classes:
  - name: interactive
    queue_policy: fcfs
    quantum: 4
    queue_limit: 8
  - name: batch
    queue_policy: fcfs
    quantum: 0
`

const registered = "registered types: fake, nil-classifier, nil-factory, pass-through, record"

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // each problem, in order: a substring of its message
	}{
		// The document.
		{"syntax", "a: [\n", []string{"admission.yaml:1: invalid YAML: did not find expected node content"}},
		{"syntax on a later line", "session_header: x\n  capture_headers: y\n",
			[]string{"admission.yaml:2: invalid YAML: mapping values are not allowed in this context"}},
		{"two documents", "session_header: x\n---\nsession_header: y\n",
			[]string{"admission.yaml:2: a second YAML document; the file must hold one"}},
		{"second document broken", "session_header: x\n---\n[\n", []string{"admission.yaml:3: invalid YAML: "}},
		{"top level a list", "- a\n", []string{"admission.yaml:1: the top level must be a mapping, got a list"}},
		{"top level a string", "\nhello\n", []string{`admission.yaml:2: the top level must be a mapping, got str "hello"`}},
		{"unknown field", "\nsesion_header: x\n", []string{"admission.yaml:2: sesion_header: unknown field (known: request_classifier, " +
			"session_header, capture_headers, default_policy_class, policy_classes)"}},
		{"repeated field", "session_header: a\nsession_header: b\n", []string{"admission.yaml:2: session_header: repeated (first at line 1)"}},
		{"key not a name", "? [a]\n: b\n", []string{"admission.yaml:1: keys must be names, got a list"}},
		{"seed verbatim", seedVerbatim, []string{
			"admission.yaml:6: default_policy_family: unknown field",
			"admission.yaml:7: uncached_isl_buckets: unknown field",
			"admission.yaml:12: policy_classes[0].policy_family: unknown field (known: name, queue_policy, quantum, queue_limit)",
			"admission.yaml:13: policy_classes[0].cache_bucket: unknown field",
			"admission.yaml:16: policy_classes[0].prefill_busy_threshold_frac: unknown field",
			"admission.yaml: default_policy_class: required when policy_classes is set (classes: standard_all)",
		}},

		// request_classifier.
		{"classifier not a mapping", "request_classifier: fake\n",
			[]string{`admission.yaml:1: request_classifier: must be a mapping, got str "fake"`}},
		{"type missing", "request_classifier:\n  parameters: {}\n", []string{"admission.yaml:1: request_classifier.type: required"}},
		{"type empty", "request_classifier:\n  type: ''\n",
			[]string{"admission.yaml:2: request_classifier.type: must not be empty (" + registered + ")"}},
		{"type a list", "request_classifier:\n  type: [a]\n", []string{"admission.yaml:2: request_classifier.type: must be a string, got a list"}},
		{"unknown type", "request_classifier:\n  type: acme-queue-budget\n",
			[]string{`admission.yaml:2: request_classifier.type: unknown classifier type "acme-queue-budget" (` + registered + ")"}},
		{"unknown classifier field", "request_classifier:\n  type: fake\n  params: {}\n",
			[]string{"admission.yaml:3: request_classifier.params: unknown field (known: type, parameters)"}},
		{"parameters a list", "request_classifier:\n  type: fake\n  parameters: [1]\n",
			[]string{"admission.yaml:3: request_classifier.parameters: must be a mapping, got a list"}},
		{"parameters a number", "request_classifier:\n  type: fake\n  parameters: 2000\n",
			[]string{`admission.yaml:3: request_classifier.parameters: must be a mapping, got int "2000"`}},
		{"parameter repeated", "request_classifier:\n  type: record\n  parameters:\n    a: 1\n    a: 2\n",
			[]string{`admission.yaml:5: request_classifier.parameters: mapping key "a" already defined at line 4`}},
		{"parameter not JSON", "request_classifier:\n  type: record\n  parameters:\n    ratio: .nan\n",
			[]string{"admission.yaml:4: request_classifier.parameters: cannot be written as JSON: json: unsupported value: NaN"}},
		{"parameter key null", "request_classifier:\n  type: record\n  parameters: {x: {~: 1}}\n",
			[]string{"admission.yaml:3: request_classifier.parameters: cannot be written as JSON: a key is null"}},
		{"parameter keys collide", "request_classifier:\n  type: record\n  parameters: {x: {1: a, 1.0: b}}\n",
			[]string{`admission.yaml:3: request_classifier.parameters: cannot be written as JSON: key "1" is given twice`}},
		{"parameter keys repeated as text", "request_classifier:\n  type: record\n  parameters: {x: {1: a, '1': b}}\n",
			[]string{`admission.yaml:3: request_classifier.parameters: mapping key "1" already defined at line 3`}},
		{"parameter key a list", "request_classifier:\n  type: record\n  parameters:\n    ? [a]\n    : 1\n",
			[]string{`admission.yaml:4: request_classifier.parameters: invalid map key: []interface {}{"a"}`}},
		{"provider refuses", "request_classifier:\n  type: fake\n  parameters:\n    max_wait_ms: 60001\n",
			[]string{"admission.yaml:4: request_classifier.parameters: max_wait_ms must be between 1 and 60000"}},
		{"provider refuses a field", "request_classifier:\n  type: fake\n  parameters:\n    max_wait: 5\n",
			[]string{`admission.yaml:4: request_classifier.parameters: json: unknown field "max_wait"`}},
		{"pass-through takes no parameters", "request_classifier:\n  type: pass-through\n  parameters: {x: 1}\n",
			[]string{`admission.yaml:3: request_classifier.parameters: json: unknown field "x"`}},
		{"no factory", "request_classifier:\n  type: nil-factory\n",
			[]string{`admission.yaml:2: request_classifier.type: the provider of "nil-factory" returned no factory`}},
		{"factory refuses", "request_classifier:\n  type: fake\n  parameters: {class: vip}\n",
			[]string{`admission.yaml:1: request_classifier: making the "fake" classifier: class "vip" is not configured`}},
		{"no classifier", "\nrequest_classifier:\n  type: nil-classifier\n",
			[]string{`admission.yaml:2: request_classifier: the factory of "nil-classifier" returned no classifier`}},

		// Headers.
		{"session header not a token", "session_header: x session\n",
			[]string{`admission.yaml:1: session_header: must be a header name (letters, digits and !#$%&'*+-.^_` + "`|~), got \"x session\""}},
		{"session header a list", "session_header: [a]\n", []string{"admission.yaml:1: session_header: must be a string, got a list"}},
		{"session header empty", "session_header: ''\n", []string{`admission.yaml:1: session_header: must be a header name`}},
		{"capture headers not a list", "capture_headers: x-a\n", []string{`admission.yaml:1: capture_headers: must be a list, got str "x-a"`}},
		{"capture header items", "capture_headers:\n  - x-a\n  - x:a\n  - ~\n  - {a: b}\n  - é\n", []string{
			`admission.yaml:3: capture_headers[1]: must be a header name`,
			`admission.yaml:4: capture_headers[2]: must be a header name, got null`,
			`admission.yaml:5: capture_headers[3]: must be a string, got a mapping`,
			`admission.yaml:6: capture_headers[4]: must be a header name`,
		}},

		// Classes.
		{"default class missing", "policy_classes: [{name: a}, {name: b}]\n",
			[]string{"admission.yaml: default_policy_class: required when policy_classes is set (classes: a, b)"}},
		{"default class unknown", "policy_classes: [{name: a}, {name: b}]\ndefault_policy_class: c\n",
			[]string{`admission.yaml:2: default_policy_class: "c" is not one of policy_classes (classes: a, b)`}},
		{"default class a list", "default_policy_class: [a]\npolicy_classes: [{name: a}]\n",
			[]string{"admission.yaml:1: default_policy_class: must be a string, got a list"}},
		{"default class invalid alone", "default_policy_class: Gold\n",
			[]string{`admission.yaml:1: default_policy_class: must be made of a-z, 0-9, _ and -, got "Gold"`}},
		{"classes not a list", "policy_classes: {name: a}\n", []string{"admission.yaml:1: policy_classes: must be a list, got a mapping"}},
		{"class not a mapping", "default_policy_class: a\npolicy_classes:\n  - a\n",
			[]string{`admission.yaml:3: policy_classes[0]: must be a mapping, got str "a"`,
				`admission.yaml:1: default_policy_class: "a" is not one of policy_classes (classes: )`}},
		{"class name missing", "default_policy_class: a\npolicy_classes:\n  - name: a\n  - quantum: 2\n",
			[]string{"admission.yaml:4: policy_classes[1].name: required"}},
		{"class name empty", "default_policy_class: a\npolicy_classes:\n  - name: a\n  - name: ''\n",
			[]string{"admission.yaml:4: policy_classes[1].name: must not be empty"}},
		{"class name too long", "default_policy_class: a\npolicy_classes:\n  - name: a\n  - name: " + strings.Repeat("x", 65) + "\n",
			[]string{"admission.yaml:4: policy_classes[1].name: must be at most 64 characters, got 65"}},
		{"long values are clipped", "default_policy_class: a\npolicy_classes:\n  - name: a\n    queue_policy: " + strings.Repeat("é", 40) + "\n",
			[]string{`admission.yaml:4: policy_classes[0].queue_policy: must be "fcfs", got "` + strings.Repeat("é", 32) + `..."`}},
		{"class name characters", "default_policy_class: a\npolicy_classes:\n  - name: a\n  - name: Bulk Jobs\n",
			[]string{`admission.yaml:4: policy_classes[1].name: must be made of a-z, 0-9, _ and -, got "Bulk Jobs"`}},
		{"class name a mapping", "default_policy_class: a\npolicy_classes:\n  - name: a\n  - name: {x: y}\n",
			[]string{"admission.yaml:4: policy_classes[1].name: must be a string, got a mapping"}},
		{"class repeated", "default_policy_class: a\npolicy_classes:\n  - name: a\n  - name: b\n  - name: a\n",
			[]string{`admission.yaml:5: policy_classes[2].name: class "a" is already defined at line 3`}},
		{"unknown class field", "default_policy_class: a\npolicy_classes:\n  - name: a\n    quantom: 4\n",
			[]string{"admission.yaml:4: policy_classes[0].quantom: unknown field (known: name, queue_policy, quantum, queue_limit)"}},
		{"merge key in a class", "default_policy_class: a\nbase: &b {quantum: 2}\npolicy_classes:\n  - name: a\n    <<: *b\n",
			[]string{"admission.yaml:2: base: unknown field", "admission.yaml:5: policy_classes[0].<<: unknown field"}},
		{"queue policy", "default_policy_class: a\npolicy_classes:\n  - name: a\n    queue_policy: lifo\n",
			[]string{`admission.yaml:4: policy_classes[0].queue_policy: must be "fcfs", got "lifo"`}},
		{"quantum zero", twoClasses, []string{"admission.yaml:12: policy_classes[1].quantum: must be from 1 to 1000000, got 0"}},
		{"quantum too large", "default_policy_class: a\npolicy_classes:\n  - {name: a, quantum: 1000001}\n",
			[]string{"admission.yaml:3: policy_classes[0].quantum: must be from 1 to 1000000, got 1000001"}},
		{"quantum quoted", "default_policy_class: a\npolicy_classes:\n  - {name: a, quantum: '4'}\n",
			[]string{`admission.yaml:3: policy_classes[0].quantum: must be an integer from 1 to 1000000, got str "4"`}},
		{"quantum a float", "default_policy_class: a\npolicy_classes:\n  - {name: a, quantum: 4.0}\n",
			[]string{`admission.yaml:3: policy_classes[0].quantum: must be an integer from 1 to 1000000, got float "4.0"`}},
		{"quantum overflows", "default_policy_class: a\npolicy_classes:\n  - {name: a, quantum: 0x7fffffffffffffffff}\n",
			[]string{`admission.yaml:3: policy_classes[0].quantum: must be an integer from 1 to 1000000, got str "0x7fffffffffffffffff"`}},
		{"queue limit negative", "default_policy_class: a\npolicy_classes:\n  - {name: a, queue_limit: -1}\n",
			[]string{"admission.yaml:3: policy_classes[0].queue_limit: must be from 0 to 2147483647, got -1"}},

		// Everything at once: every problem is reported, in file order.
		{"many", "request_classifier: {type: nope}\nsession_header: 'a b'\ndefault_policy_class: z\npolicy_classes:\n" +
			"  - {name: a, quantum: 0}\n  - {name: a, queue_limit: x}\n", []string{
			"admission.yaml:2: session_header: must be a header name",
			"admission.yaml:5: policy_classes[0].quantum: must be from 1 to 1000000, got 0",
			`admission.yaml:6: policy_classes[1].queue_limit: must be an integer from 0 to 2147483647, got str "x"`,
			`admission.yaml:6: policy_classes[1].name: class "a" is already defined at line 5`,
			`admission.yaml:3: default_policy_class: "z" is not one of policy_classes (classes: a)`,
			`admission.yaml:1: request_classifier.type: unknown classifier type "nope"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, _ := testRegistry()
			cfg, err := policy.Parse(file, []byte(tc.yaml), reg)
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", cfg)
			}
			if cfg != nil {
				t.Errorf("Parse returned a Config with its error: %+v", cfg)
			}
			got := problems(err)
			if len(got) != len(tc.want) {
				t.Fatalf("%d problems, want %d:\n%s", len(got), len(tc.want), err)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d:\n  got  %s\n  want %s", i, got[i], w)
				}
			}
		})
	}
}

func TestParseTooLarge(t *testing.T) {
	_, err := policy.Parse(file, make([]byte, policy.MaxSize+1), nil)
	if err == nil || err.Error() != "admission.yaml: admission config is larger than 1048576 bytes" {
		t.Errorf("error %v", err)
	}
}

func TestProblemLimit(t *testing.T) {
	var b strings.Builder
	for i := range 150 {
		fmt.Fprintf(&b, "unknown_%d: 1\n", i)
	}
	got := problems(parseErr(t, b.String()))
	if len(got) != 101 || !strings.Contains(got[99], "admission.yaml:100: unknown_99: unknown field") ||
		got[100] != "admission.yaml: stopped after 100 problems" {
		t.Errorf("%d problems, ending %q", len(got), got[len(got)-2:])
	}
}

// TestAliasBomb is a regression test: a large mapping named many times
// by aliases used to be walked, and its problems reported, once per
// alias (quadratic in the file's size).
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("x: &big {")
	for i := range 40000 {
		fmt.Fprintf(&b, "k%d: 1, ", i)
	}
	b.WriteString("}\npolicy_classes: [")
	b.WriteString(strings.Repeat("*big, ", 40000))
	b.WriteString("]\n")
	if b.Len() > policy.MaxSize {
		t.Fatalf("the test file is %d bytes", b.Len())
	}
	if got := problems(parseErr(t, b.String())); len(got) != 101 {
		t.Errorf("%d problems", len(got))
	}
}

func parseErr(t *testing.T, yaml string) error {
	t.Helper()
	reg, _ := testRegistry()
	cfg, err := policy.Parse(file, []byte(yaml), reg)
	if err == nil {
		t.Fatalf("Parse succeeded: %+v", cfg)
	}
	return err
}
