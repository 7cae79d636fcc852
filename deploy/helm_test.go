package deploy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"sigs.k8s.io/yaml"
)

// helmRender renders a chart as `helm install --dry-run=client` would:
// Helm's loader, its values coalescing with the schema validated, and its
// template engine, with release name "slotgate" in namespace "default".
func helmRender(ch *chart.Chart, vals map[string]any) (map[string]string, error) {
	rv, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals,
		common.ReleaseOptions{Name: "slotgate", Namespace: "default", Revision: 1, IsInstall: true}, nil, false)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, rv)
}

// checkRendered decodes every rendered manifest strictly and checks the
// slotgate container's settings.
func checkRendered(t *testing.T, src string, out map[string]string, known knownSettings) []error {
	t.Helper()
	_, errs := checkRenderedObjs(t, src, out, known, true)
	return errs
}

// checkRenderedObjs is checkRendered, returning the objects too;
// requireSlotgate says whether a render without a slotgate container is
// an error.
func checkRenderedObjs(t *testing.T, src string, out map[string]string, known knownSettings, requireSlotgate bool) ([]any, []error) {
	t.Helper()
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	var all []byte
	for _, name := range names {
		base := filepath.Base(name)
		if strings.HasSuffix(name, "NOTES.txt") || strings.HasPrefix(base, "_") || strings.TrimSpace(out[name]) == "" {
			continue
		}
		all = append(all, []byte("---\n# Source: "+name+"\n"+out[name]+"\n")...)
	}
	return checkBuiltSlotgate(t, src, all, &known, requireSlotgate)
}

// helmExamples returns the chart's examples/*.yaml values files.
func helmExamples(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "examples", "*.yaml"))
	return files
}

func loadValuesFile(t *testing.T, path string) map[string]any {
	t.Helper()
	v, err := common.ReadValuesFile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// schemaMinimums returns, from a values.schema.json, every numeric
// property with a minimum of 0 or more (limits, ports, counts): its path in
// the values and its minimum.
func schemaMinimums(schema []byte) map[string]float64 {
	var s map[string]any
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	found := map[string]float64{}
	var walk func(node map[string]any, path []string)
	walk = func(node map[string]any, path []string) {
		if m, ok := node["minimum"].(float64); ok && m >= 0 && len(path) > 0 {
			found[strings.Join(path, ".")] = m
		}
		props, _ := node["properties"].(map[string]any)
		for k, child := range props {
			if c, ok := child.(map[string]any); ok {
				walk(c, append(append([]string{}, path...), k))
			}
		}
	}
	walk(s, nil)
	return found
}

// setPath sets vals[path...] = v, making maps on the way.
func setPath(vals map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		next, ok := vals[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			vals[k] = next
		}
		vals = next
	}
	vals[path[len(path)-1]] = v
}

// checkChart renders the chart with its defaults and with each example
// values file, and checks the schema rejects a value below a minimum.
func checkChart(t *testing.T, dir string, known knownSettings) {
	t.Helper()
	ch, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatalf("helm: loading the chart deploy/%s: %v", dir, err)
	}
	if err := ch.Validate(); err != nil {
		t.Errorf("Chart.yaml: %v", err)
	}
	// Helm's loader ignores unknown fields in Chart.yaml; decode it
	// strictly into Helm's Metadata type to catch a misspelt one.
	var md chart.Metadata
	if err := yaml.UnmarshalStrict(mustRead(t, filepath.Join(dir, "Chart.yaml")), &md); err != nil {
		t.Errorf("deploy/%s/Chart.yaml: %v", dir, err)
	}
	if ch.Schema == nil {
		t.Errorf("deploy/%s has no values.schema.json", dir)
	}
	t.Run("defaults", func(t *testing.T) {
		out, err := helmRender(ch, nil)
		if err != nil {
			t.Fatalf("rendering with the default values: %v", err)
		}
		reportErrs(t, "", checkRendered(t, "helm render (defaults)", out, known))
	})
	examples := helmExamples(t, dir)
	if len(examples) == 0 {
		t.Errorf("deploy/%s/examples holds no values file", dir)
	}
	for _, ex := range examples {
		t.Run(filepath.Base(ex), func(t *testing.T) {
			vals := loadValuesFile(t, ex)
			out, err := helmRender(ch, vals)
			if err != nil {
				t.Fatalf("rendering with %s: %v", ex, err)
			}
			objs, errs := checkRenderedObjs(t, "helm render ("+filepath.Base(ex)+")", out, known, false)
			reportErrs(t, "", errs)
			if n, _ := checkSlotgateSettings("", objs, known); n > 0 {
				return
			}
			// No workload: an example for injecting slotgate into an
			// existing pod. Render the chart's strategic-merge patch
			// (sidecar.patch) too, so the container it injects is checked.
			if _, ok := ch.Values["sidecar"].(map[string]any)["patch"]; !ok {
				t.Fatalf("%s renders no slotgate container, and the chart has no sidecar.patch to render one", ex)
			}
			setPath(vals, []string{"sidecar", "patch", "enabled"}, true)
			setPath(vals, []string{"sidecar", "patch", "deploymentName"}, "engine")
			out, err = helmRender(ch, vals)
			if err != nil {
				t.Fatalf("rendering with %s and sidecar.patch.enabled: %v", ex, err)
			}
			reportErrs(t, "", checkRendered(t, "helm render ("+filepath.Base(ex)+", sidecar.patch.enabled)", out, known))
		})
	}
	t.Run("schema rejects a value below its minimum", func(t *testing.T) {
		if ch.Schema == nil {
			t.Skip("no schema")
		}
		mins := schemaMinimums(ch.Schema)
		limits := 0
		paths := make([]string, 0, len(mins))
		for p := range mins {
			paths = append(paths, p)
			if strings.Contains(strings.ToLower(p), "limit") {
				limits++
			}
		}
		sort.Strings(paths)
		if limits == 0 {
			t.Errorf("values.schema.json gives no limit a minimum: nothing stops a negative limit (minimums: %v)", paths)
		}
		for _, p := range paths {
			vals := map[string]any{}
			setPath(vals, strings.Split(p, "."), mins[p]-1)
			if _, err := helmRender(ch, vals); err == nil {
				t.Errorf("%s = %v rendered; the schema should reject it (minimum %v)", p, mins[p]-1, mins[p])
			} else if strings.Contains(strings.ToLower(p), "limit") {
				t.Logf("%s = %v rejected: %s", p, mins[p]-1, firstLine(err.Error(), 3))
			}
		}
		t.Logf("%d values below their schema minimum tried, %d of them limits", len(paths), limits)
	})
}

func firstLine(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " / ")
}

// TestHelmChart renders deploy/helm/slotgate through Helm's own engine with
// the default values and with each examples/*.yaml, decodes every rendered
// object strictly, checks the slotgate container's settings, and checks
// that values.schema.json rejects a value below a minimum.
func TestHelmChart(t *testing.T) {
	known := slotgateHelp(t)
	if _, err := os.Stat(filepath.Join(helmChartDir, "Chart.yaml")); err != nil {
		t.Fatalf("required chart deploy/%s: %v", helmChartDir, err)
	}
	checkChart(t, helmChartDir, known)
}

func TestHelmFixtures(t *testing.T) {
	known := parseHelp("--engine-request-limit DYN_DYNAMO_REQUEST_QUEUE_LIMIT\n--engine-url SLOTGATE_LOG_LEVEL\n")
	checkChart(t, "testdata/helm/slotgate", known)
	t.Run("bad values", func(t *testing.T) {
		ch, err := loader.LoadDir("testdata/helm/slotgate")
		if err != nil {
			t.Fatal(err)
		}
		out, err := helmRender(ch, loadValuesFile(t, "testdata/helm/bad-values.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		expectErrs(t, checkRendered(t, "bad", out, known), `unknown field`, `SLOTGATE_NOPE is not one slotgate knows`)
		_, err = helmRender(ch, map[string]any{"limits": map[string]any{"engineRequests": "many"}})
		if err == nil {
			t.Error("a string limit rendered; the schema should reject it")
		}
	})
}

// TestHelmIssue19Values: the chart takes the token limits, the
// first-token watchdog and --retry-after auto, and refuses at render what
// slotgate would refuse at start: a token limit without N or W.
func TestHelmIssue19Values(t *testing.T) {
	ch, err := loader.LoadDir(helmChartDir)
	if err != nil {
		t.Fatal(err)
	}
	good := map[string]any{
		"limits":   map[string]any{"engineRequestLimit": 8, "enginePrefillTokenLimit": 16384, "requestQueueTokenLimit": 262144},
		"overload": map[string]any{"retryAfter": "auto"},
		"timeouts": map[string]any{"firstTokenTimeout": "10s", "firstTokenTimeoutPer1kTokens": "500ms"},
	}
	out, err := helmRender(ch, good)
	if err != nil {
		t.Fatalf("rendering the token limits, the watchdog and retryAfter auto: %v", err)
	}
	for _, want := range []string{"SLOTGATE_ENGINE_PREFILL_TOKEN_LIMIT", "SLOTGATE_REQUEST_QUEUE_TOKEN_LIMIT",
		"SLOTGATE_FIRST_TOKEN_TIMEOUT", "SLOTGATE_FIRST_TOKEN_TIMEOUT_PER_1K_TOKENS", `value: "auto"`} {
		found := false
		for _, doc := range out {
			found = found || strings.Contains(doc, want)
		}
		if !found {
			t.Errorf("the render has no %s", want)
		}
	}
	for _, name := range []string{"enginePrefillTokenLimit", "requestQueueTokenLimit"} {
		_, err := helmRender(ch, map[string]any{"limits": map[string]any{name: 1000}})
		if err == nil || !strings.Contains(err.Error(), "needs N or W") {
			t.Errorf("limits.%s without N or W: %v; want the chart to refuse it", name, err)
		}
	}
	if _, err := helmRender(ch, map[string]any{"overload": map[string]any{"retryAfter": "automatic"}}); err == nil {
		t.Error(`overload.retryAfter "automatic" rendered; the schema should reject it`)
	}
}

// TestHelmGRPCPort: with a gRPC engine and ports.grpc unset, the chart
// gives slotgate its own gRPC port, 9092 (grpc-go's own server, half the
// CPU per streamed message of the proxy port): the variable, the container
// port, the Service port and the NetworkPolicy's; ports.grpc sets another,
// 0 none; without a gRPC engine there is none.
func TestHelmGRPCPort(t *testing.T) {
	ch, err := loader.LoadDir(helmChartDir)
	if err != nil {
		t.Fatal(err)
	}
	deployment := func(ports map[string]any) map[string]any {
		v := map[string]any{"mode": "deployment", "engine": map[string]any{"grpcPort": 50051},
			"networkPolicy": map[string]any{"enabled": true}}
		if ports != nil {
			v["ports"] = ports
		}
		return v
	}
	tests := []struct {
		name   string
		values map[string]any
		want   string // the port, "" for none
	}{
		{"a gRPC engine", deployment(nil), "9092"},
		{"an engine gRPC URL, default mode", map[string]any{"upstream": map[string]any{"grpcUrl": "http://127.0.0.1:50051"},
			"networkPolicy": map[string]any{"enabled": true}}, "9092"},
		{"ports.grpc set", deployment(map[string]any{"grpc": 9000}), "9000"},
		{"ports.grpc 0", deployment(map[string]any{"grpc": 0}), ""},
		{"no gRPC engine", map[string]any{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helmRender(ch, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			// Each line without its indentation, which differs by template.
			var lines []string
			for _, doc := range out {
				for line := range strings.SplitSeq(doc, "\n") {
					lines = append(lines, strings.TrimSpace(line))
				}
			}
			all := strings.Join(lines, "\n")
			listen := strings.Contains(all, "SLOTGATE_GRPC_LISTEN")
			if tc.want == "" {
				if listen || strings.Contains(all, "- name: grpc\n") {
					t.Errorf("a gRPC port rendered, want none:\n%s", all)
				}
				return
			}
			for _, want := range []string{
				"- name: SLOTGATE_GRPC_LISTEN\nvalue: \":" + tc.want + "\"",
				"- name: grpc\ncontainerPort: " + tc.want,
				"- name: grpc\nport: " + tc.want + "\ntargetPort: grpc",
				"- port: " + tc.want + "\nprotocol: TCP", // the NetworkPolicy's
			} {
				if !strings.Contains(all, want) {
					t.Errorf("the render has no %q", want)
				}
			}
		})
	}
	if _, err := helmRender(ch, deployment(map[string]any{"grpc": nil, "proxy": 9092})); err == nil || !strings.Contains(err.Error(), "ports collide") {
		t.Errorf("the proxy port on the gRPC port's 9092: %v; want the chart to refuse it", err)
	}
}
