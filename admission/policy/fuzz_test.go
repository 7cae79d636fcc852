package policy_test

import (
	"strings"
	"testing"

	"github.com/slotgate/slotgate/admission/policy"
)

// FuzzParse checks Parse never panics, names the file in every problem,
// and returns only Configs that keep the package's invariants.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "# only a comment\n", "---\n", "~\n", seedLike, full, seedVerbatim, twoClasses,
		"request_classifier: {type: fake}\n",
		"request_classifier:\n  type: record\n  parameters: {a: [1, {b: c}], d: &x {e: 1}, f: *x, g: .nan}\n",
		"request_classifier: {type: fake, parameters: {class: vip}}\ndefault_policy_class: vip\npolicy_classes: [{name: vip}]\n",
		"request_classifier: {type: pass-through}\n",
		"session_header: X-S\ncapture_headers: [x-a, X-S, 'b c', ~]\n",
		"default_policy_class: &d a\npolicy_classes:\n  - {name: *d, quantum: &q 7}\n  - {name: b, quantum: *q, queue_limit: -1}\n",
		"policy_classes: &a [*a]\n",
		"a: [\n", "x: 1\n---\ny: 2\n", "- a\n", "? [a]\n: b\n",
	} {
		f.Add(s)
	}
	reg, _ := testRegistry()
	f.Fuzz(func(t *testing.T, data string) {
		cfg, err := policy.Parse(file, []byte(data), reg)
		if err != nil {
			if cfg != nil {
				t.Errorf("a Config with an error: %+v", cfg)
			}
			for _, p := range problems(err) {
				if !strings.HasPrefix(p, file+":") {
					t.Errorf("problem %q does not name the file", p)
				}
			}
			return
		}
		if err := invariants(cfg); err != nil {
			t.Errorf("accepted %q: %v", data, err)
		}
	})
}
