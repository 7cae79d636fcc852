package deploy_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kustomizeBuild renders a kustomization directory in memory with
// sigs.k8s.io/kustomize/api (the library kubectl kustomize embeds).
func kustomizeBuild(dir string) ([]byte, error) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	return m.AsYaml()
}

// checkBuilt decodes every object of a build strictly and checks the
// slotgate container's settings; it returns the objects.
func checkBuilt(t *testing.T, src string, out []byte, known *knownSettings) ([]any, []error) {
	t.Helper()
	return checkBuiltSlotgate(t, src, out, known, true)
}

// checkBuiltSlotgate is checkBuilt; requireSlotgate says whether a build
// without a slotgate container is an error.
func checkBuiltSlotgate(t *testing.T, src string, out []byte, known *knownSettings, requireSlotgate bool) ([]any, []error) {
	t.Helper()
	docs, err := splitYAML(src, out)
	if err != nil {
		return nil, []error{err}
	}
	var objs []any
	var errs []error
	for _, d := range docs {
		obj, err := decodeStrict(d)
		if err != nil {
			errs = append(errs, err)
		}
		if obj != nil {
			objs = append(objs, obj)
		}
	}
	if len(objs) == 0 {
		errs = append(errs, fmt.Errorf("%s: the build holds no object", src))
	}
	if known != nil {
		n, e := checkSlotgateSettings(src, objs, *known)
		errs = append(errs, e...)
		if n == 0 && requireSlotgate {
			errs = append(errs, fmt.Errorf("%s: no slotgate container in the build", src))
		}
	}
	return objs, errs
}

// externalKustomize finds a kustomize no one here wrote: kubectl kustomize
// (it embeds kustomize), else a kustomize binary on PATH.
func externalKustomize() ([]string, string) {
	if p, err := exec.LookPath("kubectl"); err == nil {
		return []string{p, "kustomize"}, ""
	}
	if p, err := exec.LookPath("kustomize"); err == nil {
		return []string{p, "build"}, ""
	}
	return nil, "neither kubectl nor kustomize is on PATH: install kubectl (it embeds kustomize) to compare the in-memory builds with it"
}

// sameObjects compares two builds as sets of objects, ignoring order and
// formatting.
func sameObjects(a, b []byte) error {
	parse := func(src string, y []byte) (map[string]any, error) {
		docs, err := splitYAML(src, y)
		if err != nil {
			return nil, err
		}
		objs := map[string]any{}
		for _, d := range docs {
			var v map[string]any
			if err := yaml.Unmarshal(d.data, &v); err != nil {
				return nil, err
			}
			md, _ := v["metadata"].(map[string]any)
			key := fmt.Sprintf("%v %v %v/%v", v["apiVersion"], v["kind"], md["namespace"], md["name"])
			objs[key] = v
		}
		return objs, nil
	}
	oa, err := parse("in-memory", a)
	if err != nil {
		return err
	}
	ob, err := parse("external", b)
	if err != nil {
		return err
	}
	var keys []string
	for k := range oa {
		keys = append(keys, k)
	}
	for k := range ob {
		if _, ok := oa[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		va, okA := oa[k]
		vb, okB := ob[k]
		switch {
		case !okA:
			return fmt.Errorf("%s only in the external build", k)
		case !okB:
			return fmt.Errorf("%s only in the in-memory build", k)
		case !reflect.DeepEqual(va, vb):
			ya, _ := yaml.Marshal(va)
			yb, _ := yaml.Marshal(vb)
			return fmt.Errorf("%s differs:\nin-memory:\n%s\nexternal:\n%s", k, ya, yb)
		}
	}
	return nil
}

// overlayDirs returns every directory under overlays/ that holds a
// kustomization, failing when a required overlay is missing.
func overlayDirs(t *testing.T) []string {
	t.Helper()
	files := requireFiles(t, overlaysDir, "kustomization.yaml", "kustomization.yml")
	var dirs []string
	have := map[string]bool{}
	for _, f := range files {
		dirs = append(dirs, filepath.Dir(f))
		rel, _ := filepath.Rel(overlaysDir, filepath.Dir(f))
		have[rel] = true
	}
	for _, o := range requiredOverlays {
		if !have[o] {
			t.Errorf("required overlay deploy/%s/%s has no kustomization.yaml", overlaysDir, o)
		}
	}
	return dirs
}

// TestKustomizeOverlays builds the base and every overlay in memory, decodes
// every object strictly, checks the slotgate container's settings, and
// compares each build with kubectl kustomize (or kustomize build).
func TestKustomizeOverlays(t *testing.T) {
	known := slotgateHelp(t)
	requireFiles(t, kustomizeBase, "kustomization.yaml", "kustomization.yml")
	ext, why := externalKustomize()
	for _, dir := range append([]string{kustomizeBase}, overlayDirs(t)...) {
		t.Run(dir, func(t *testing.T) {
			out, err := kustomizeBuild(dir)
			if err != nil {
				t.Fatalf("kustomize build deploy/%s: %v", dir, err)
			}
			_, errs := checkBuilt(t, "build of deploy/"+dir, out, &known)
			reportErrs(t, "", errs)
			t.Run("external", func(t *testing.T) {
				if ext == nil {
					t.Skip(why)
				}
				got, err := runExternal(ext, dir)
				if err != nil {
					t.Fatal(err)
				}
				if err := sameObjects(out, got); err != nil {
					t.Errorf("%s %s differs from the in-memory build: %v", filepath.Base(ext[0]), dir, err)
				}
			})
		})
	}
}

func runExternal(ext []string, dir string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ext[0], append(ext[1:], dir)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v %s: %v\n%s", ext, dir, err, stderr.Bytes())
	}
	return out, nil
}

func TestKustomizeFixtures(t *testing.T) {
	known := parseHelp("--engine-request-limit DYN_DYNAMO_REQUEST_QUEUE_LIMIT SLOTGATE_LOG_LEVEL\n--engine-url\n")
	t.Run("valid", func(t *testing.T) {
		out, err := kustomizeBuild("testdata/manifests/valid")
		if err != nil {
			t.Fatal(err)
		}
		objs, errs := checkBuilt(t, "valid", out, &known)
		reportErrs(t, "", errs)
		if len(objs) != 8 {
			t.Errorf("the build holds %d objects, want 8", len(objs))
		}
		ext, why := externalKustomize()
		if ext == nil {
			t.Skip(why)
		}
		got, err := runExternal(ext, "testdata/manifests/valid")
		if err != nil {
			t.Fatal(err)
		}
		if err := sameObjects(out, got); err != nil {
			t.Error(err)
		}
		// And the comparison can fail.
		if sameObjects(out, bytes.Replace(got, []byte("replicas: 2"), []byte("replicas: 3"), 1)) == nil {
			t.Error("sameObjects missed a changed field")
		}
	})
	t.Run("invalid", func(t *testing.T) {
		out, err := kustomizeBuild("testdata/kustomize/invalid")
		if err != nil {
			t.Fatal(err)
		}
		_, errs := checkBuilt(t, "invalid", out, &known)
		expectErrs(t, errs, "unknown field", "restartPolcy")
	})
}
