package deploy_test

import (
	"path/filepath"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	corev1 "k8s.io/api/core/v1"
)

// maxProcsEnv returns the SLOTGATE_MAX_PROCS entry of the one slotgate
// container among objs, or nil.
func maxProcsEnv(t *testing.T, objs []any) *corev1.EnvVar {
	t.Helper()
	return slotgateEnv(t, objs, "SLOTGATE_MAX_PROCS")
}

// slotgateEnv returns the entry named name of the one slotgate container
// among objs, or nil.
func slotgateEnv(t *testing.T, objs []any, name string) *corev1.EnvVar {
	t.Helper()
	var found *corev1.EnvVar
	seen := 0
	for _, spec := range podSpecs(objs) {
		for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
			for i := range list {
				if !isSlotgate(&list[i]) {
					continue
				}
				seen++
				for j, e := range list[i].Env {
					if e.Name == name {
						found = &list[i].Env[j]
					}
				}
			}
		}
	}
	if seen != 1 {
		t.Fatalf("%d slotgate containers, want 1", seen)
	}
	return found
}

// fromCPURequest reports whether e takes the container's CPU request,
// rounded up to whole processors.
func fromCPURequest(e *corev1.EnvVar) bool {
	if e == nil || e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef == nil {
		return false
	}
	ref := e.ValueFrom.ResourceFieldRef
	return ref.Resource == "requests.cpu" && ref.Divisor.String() == "1"
}

// TestMaxProcsFromCPURequest: the chart, by default, and the kustomize
// base set SLOTGATE_MAX_PROCS from the slotgate container's CPU request
// through the downward API (500m gives 1), rather than leaving Go to take
// every CPU of a GPU node; container.maxProcs sets a number instead, or
// nothing, and the schema refuses anything else.
func TestMaxProcsFromCPURequest(t *testing.T) {
	known := slotgateHelp(t)
	ch, err := loader.LoadDir(helmChartDir)
	if err != nil {
		t.Fatal(err)
	}
	render := func(maxProcs any, set bool) *corev1.EnvVar {
		vals := map[string]any{}
		if set {
			vals["container"] = map[string]any{"maxProcs": maxProcs}
		}
		out, err := helmRender(ch, vals)
		if err != nil {
			t.Fatalf("container.maxProcs %v: %v", maxProcs, err)
		}
		objs, errs := checkRenderedObjs(t, "maxProcs", out, known, true)
		reportErrs(t, "", errs)
		return maxProcsEnv(t, objs)
	}
	if e := render(nil, false); !fromCPURequest(e) {
		t.Errorf("default values: SLOTGATE_MAX_PROCS = %+v, want the CPU request (resourceFieldRef requests.cpu, divisor 1)", e)
	}
	if e := render(2, true); e == nil || e.Value != "2" || e.ValueFrom != nil {
		t.Errorf("container.maxProcs 2: SLOTGATE_MAX_PROCS = %+v, want the value \"2\"", e)
	}
	if e := render(nil, true); e != nil {
		t.Errorf("container.maxProcs null: SLOTGATE_MAX_PROCS = %+v, want none (Go's own choice)", e)
	}
	for _, bad := range []any{"500m", 0, "fromCPULimit"} {
		if _, err := helmRender(ch, map[string]any{"container": map[string]any{"maxProcs": bad}}); err == nil {
			t.Errorf("container.maxProcs %v rendered; the schema should refuse it", bad)
		}
	}
	_, _, objs := checkManifestFiles(t, []string{filepath.Join(kustomizeBase, "deployment.yaml")})
	if e := maxProcsEnv(t, objs); !fromCPURequest(e) {
		t.Errorf("kustomize base: SLOTGATE_MAX_PROCS = %+v, want the CPU request", e)
	}
}

// TestRelayLoopsValue: container.relayLoops renders SLOTGATE_RELAY_LOOPS
// when set and nothing by default (slotgate's own choice); the schema
// refuses what slotgate would.
func TestRelayLoopsValue(t *testing.T) {
	known := slotgateHelp(t)
	ch, err := loader.LoadDir(helmChartDir)
	if err != nil {
		t.Fatal(err)
	}
	render := func(vals map[string]any) *corev1.EnvVar {
		out, err := helmRender(ch, vals)
		if err != nil {
			t.Fatalf("values %v: %v", vals, err)
		}
		objs, errs := checkRenderedObjs(t, "relayLoops", out, known, true)
		reportErrs(t, "", errs)
		return slotgateEnv(t, objs, "SLOTGATE_RELAY_LOOPS")
	}
	if e := render(map[string]any{}); e != nil {
		t.Errorf("default values: SLOTGATE_RELAY_LOOPS = %+v, want none (slotgate's own choice)", e)
	}
	if e := render(map[string]any{"container": map[string]any{"relayLoops": 2}}); e == nil || e.Value != "2" {
		t.Errorf("container.relayLoops 2: SLOTGATE_RELAY_LOOPS = %+v, want the value \"2\"", e)
	}
	for _, bad := range []any{0, 65, "two", "auto"} {
		if _, err := helmRender(ch, map[string]any{"container": map[string]any{"relayLoops": bad}}); err == nil {
			t.Errorf("container.relayLoops %v rendered; the schema should refuse it", bad)
		}
	}
}
