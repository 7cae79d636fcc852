package deploy_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// docClass says what a YAML document is, from its top-level shape.
type docClass int

const (
	classUnknown   docClass = iota
	classK8s                // has apiVersion and kind: a Kubernetes object
	classEnvoy              // an Envoy bootstrap (static_resources, admin, node, ...)
	classPromRules          // a Prometheus rule file (groups:)
	classPromTest           // a promtool unit-test file (rule_files:, tests:)
	classJSONPatch          // an RFC 6902 patch (a list of {op, path})
)

func (c docClass) String() string {
	return [...]string{"unknown", "Kubernetes object", "Envoy bootstrap", "Prometheus rule file",
		"promtool test file", "JSON patch"}[c]
}

// envoyBootstrapKeys are top-level fields of envoy.config.bootstrap.v3.Bootstrap
// a bootstrap file is expected to have at least one of.
var envoyBootstrapKeys = []string{"static_resources", "staticResources", "dynamic_resources", "admin", "node", "layered_runtime"}

// classify tells a document's class.
func classify(d doc) (docClass, error) {
	var v any
	if err := yaml.Unmarshal(d.data, &v); err != nil {
		return classUnknown, fmt.Errorf("%s: not YAML: %w", d.source, err)
	}
	switch m := v.(type) {
	case []any:
		for _, item := range m {
			op, ok := item.(map[string]any)
			if !ok || op["op"] == nil || op["path"] == nil {
				return classUnknown, fmt.Errorf("%s: a YAML list that is not a JSON patch", d.source)
			}
		}
		return classJSONPatch, nil
	case map[string]any:
		if m["kind"] != nil || m["apiVersion"] != nil {
			return classK8s, nil
		}
		for _, k := range envoyBootstrapKeys {
			if m[k] != nil {
				return classEnvoy, nil
			}
		}
		if m["tests"] != nil || m["rule_files"] != nil {
			return classPromTest, nil
		}
		if m["groups"] != nil {
			return classPromRules, nil
		}
	}
	return classUnknown, fmt.Errorf("%s: neither a Kubernetes object (no apiVersion and kind) nor an Envoy bootstrap, Prometheus rule file, promtool test or JSON patch", d.source)
}

// patchDirectives are strategic-merge-patch keys a kustomize patch may
// hold and a typed object has no field for.
var patchDirectives = []string{"$patch", "$setElementOrder/", "$retainKeys", "$deleteFromPrimitiveList/"}

// stripPatchDirectives removes strategic-merge-patch directives, so that a
// patch decodes strictly into its kind's type.
func stripPatchDirectives(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			for _, p := range patchDirectives {
				if strings.HasPrefix(k, p) {
					delete(t, k)
					break
				}
			}
			if _, ok := t[k]; ok {
				t[k] = stripPatchDirectives(e)
			}
		}
	case []any:
		for i, e := range t {
			t[i] = stripPatchDirectives(e)
		}
	}
	return v
}

// checkManifestFiles decodes every Kubernetes object in the files strictly
// and checks JSON patches; Envoy bootstraps, rule files and promtool tests
// are left to their own checks (returned by class). Data files that a
// kustomization's generators read are skipped.
func checkManifestFiles(t *testing.T, files []string) (errs []error, byClass map[docClass][]doc, objs []any) {
	t.Helper()
	skip := generatorInputs(t, files)
	byClass = map[docClass][]doc{}
	for _, f := range files {
		if skip[filepath.Clean(f)] {
			continue
		}
		for _, d := range readDocs(t, []string{f}) {
			c, err := classify(d)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			byClass[c] = append(byClass[c], d)
			switch c {
			case classK8s:
				var v any
				if err := yaml.Unmarshal(d.data, &v); err != nil {
					errs = append(errs, err)
					continue
				}
				b, _ := json.Marshal(stripPatchDirectives(v))
				obj, err := decodeStrict(doc{source: d.source, data: b})
				if err != nil {
					errs = append(errs, err)
				}
				if obj != nil {
					objs = append(objs, obj)
				}
			case classJSONPatch:
				errs = append(errs, checkJSONPatch(d)...)
			}
		}
	}
	return errs, byClass, objs
}

// checkJSONPatch checks an RFC 6902 patch's operations.
func checkJSONPatch(d doc) []error {
	var ops []map[string]any
	if err := yaml.Unmarshal(d.data, &ops); err != nil {
		return []error{fmt.Errorf("%s: %w", d.source, err)}
	}
	var errs []error
	for i, op := range ops {
		name, _ := op["op"].(string)
		path, _ := op["path"].(string)
		switch name {
		case "add", "replace", "test":
			if _, ok := op["value"]; !ok {
				errs = append(errs, fmt.Errorf("%s: op %d (%s %s) has no value", d.source, i, name, path))
			}
		case "remove":
		case "move", "copy":
			if _, ok := op["from"].(string); !ok {
				errs = append(errs, fmt.Errorf("%s: op %d (%s %s) has no from", d.source, i, name, path))
			}
		default:
			errs = append(errs, fmt.Errorf("%s: op %d: %q is not an RFC 6902 operation", d.source, i, name))
		}
		if !strings.HasPrefix(path, "/") {
			errs = append(errs, fmt.Errorf("%s: op %d: path %q is not a JSON pointer", d.source, i, path))
		}
		for k := range op {
			switch k {
			case "op", "path", "value", "from":
			default:
				errs = append(errs, fmt.Errorf("%s: op %d: unknown field %q", d.source, i, k))
			}
		}
	}
	return errs
}

// generatorInputs returns the files that kustomizations among files name
// in configMapGenerator or secretGenerator (files: and envs:): data, not
// manifests.
func generatorInputs(t *testing.T, files []string) map[string]bool {
	t.Helper()
	skip := map[string]bool{}
	for _, f := range files {
		switch filepath.Base(f) {
		case "kustomization.yaml", "kustomization.yml", "Kustomization":
		default:
			continue
		}
		var k struct {
			ConfigMapGenerator []generatorArgs `json:"configMapGenerator"`
			SecretGenerator    []generatorArgs `json:"secretGenerator"`
		}
		if err := yaml.Unmarshal(mustRead(t, f), &k); err != nil {
			continue // reported by the strict decode
		}
		for _, g := range append(k.ConfigMapGenerator, k.SecretGenerator...) {
			for _, src := range append(g.Files, g.Envs...) {
				if _, path, ok := strings.Cut(src, "="); ok {
					src = path
				}
				skip[filepath.Clean(filepath.Join(filepath.Dir(f), src))] = true
			}
		}
	}
	return skip
}

type generatorArgs struct {
	Files []string `json:"files"`
	Envs  []string `json:"envs"`
}

// TestManifestsDecodeStrictly: every YAML document under kustomize/,
// routing/ and monitoring/ is a Kubernetes object that decodes strictly
// into the Go type of its kind (k8s.io/api, prometheus-operator, Gateway
// API, kustomize, the InferencePool copy), or one of the other file kinds
// the other tests check (Envoy bootstrap, rule file, promtool test, JSON
// patch).
func TestManifestsDecodeStrictly(t *testing.T) {
	for _, dir := range []string{kustomizeBase, overlaysDir, routingDir, monitoringDir} {
		t.Run(dir, func(t *testing.T) {
			files := requireFiles(t, dir, ".yaml", ".yml")
			errs, byClass, _ := checkManifestFiles(t, files)
			reportErrs(t, "", errs)
			if len(byClass[classK8s]) == 0 {
				t.Errorf("deploy/%s holds no Kubernetes object", dir)
			}
			for c, ds := range byClass {
				t.Logf("%d %s document(s)", len(ds), c)
			}
			if dir == routingDir {
				have := map[string]bool{}
				for _, d := range byClass[classK8s] {
					if tm, err := readTypeMeta(d); err == nil {
						have[tm.Kind] = true
					}
				}
				for _, k := range []string{"HTTPRoute", "InferencePool"} {
					if !have[k] {
						t.Errorf("deploy/%s has no %s", dir, k)
					}
				}
			}
		})
	}
	for _, o := range requiredOverlays {
		if _, err := walkFiles(filepath.Join(overlaysDir, o), "kustomization.yaml"); err != nil {
			t.Errorf("required overlay deploy/%s/%s: %v", overlaysDir, o, err)
		}
	}
}

// The fixtures prove the check passes good manifests and fails bad ones.
func TestManifestFixtures(t *testing.T) {
	t.Run("valid", func(t *testing.T) {
		files := requireFiles(t, "testdata/manifests/valid", ".yaml")
		errs, byClass, _ := checkManifestFiles(t, files)
		reportErrs(t, "", errs)
		if len(byClass[classK8s]) < 8 {
			t.Errorf("want at least 8 objects in the valid fixtures, got %d", len(byClass[classK8s]))
		}
	})
	for file, want := range map[string][]string{
		"unknown-field.yaml":       {`unknown field "restartPolcy"`},
		"wrong-type.yaml":          {"Service", "port"},
		"unknown-kind.yaml":        {"no Go type registered"},
		"podmonitor-unknown.yaml":  {`unknown field "intervall"`},
		"httproute-unknown.yaml":   {`unknown field "backendRef"`},
		"inferencepool-bad.yaml":   {`unknown field "targetPortNumber"`},
		"inferencepool-ports.yaml": {"spec.targetPorts: want 1 to 8 ports", "port is required"},
		"no-kind.yaml":             {"neither a Kubernetes object"},
		"bad-patch.yaml":           {`"merge" is not an RFC 6902 operation`},
		"rule-unknown.yaml":        {`unknown field "expression"`},
	} {
		t.Run(file, func(t *testing.T) {
			errs, _, _ := checkManifestFiles(t, []string{filepath.Join("testdata/manifests/invalid", file)})
			expectErrs(t, errs, want...)
		})
	}
}
