package deploy_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// podSpecs returns the pod specs of the workload objects, named for
// messages.
func podSpecs(objs []any) map[string]*corev1.PodSpec {
	specs := map[string]*corev1.PodSpec{}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			specs["Deployment "+o.Name] = &o.Spec.Template.Spec
		case *appsv1.StatefulSet:
			specs["StatefulSet "+o.Name] = &o.Spec.Template.Spec
		case *appsv1.DaemonSet:
			specs["DaemonSet "+o.Name] = &o.Spec.Template.Spec
		case *batchv1.Job:
			specs["Job "+o.Name] = &o.Spec.Template.Spec
		case *corev1.Pod:
			specs["Pod "+o.Name] = &o.Spec
		}
	}
	return specs
}

// isSlotgate tells slotgate's container: named slotgate or running a
// slotgate image.
func isSlotgate(c *corev1.Container) bool {
	img := c.Image
	if i := strings.LastIndex(img, "/"); i >= 0 {
		img = img[i+1:]
	}
	return c.Name == "slotgate" || strings.HasPrefix(img, "slotgate:") || img == "slotgate" || strings.HasPrefix(img, "slotgate@")
}

// checkSlotgateSettings checks that every environment variable set on a
// slotgate container, every key of a ConfigMap it takes with envFrom
// (when the ConfigMap is among objs), and every --flag in its command and
// args is one slotgate --help lists. It returns how many slotgate
// containers it saw.
func checkSlotgateSettings(src string, objs []any, known knownSettings) (int, []error) {
	configMaps := map[string]*corev1.ConfigMap{}
	for _, o := range objs {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			configMaps[cm.Name] = cm
		}
	}
	var errs []error
	n := 0
	for name, spec := range podSpecs(objs) {
		for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
			for i := range list {
				c := &list[i]
				if !isSlotgate(c) {
					continue
				}
				n++
				where := fmt.Sprintf("%s: %s container %q", src, name, c.Name)
				for _, e := range c.Env {
					if !known.env[e.Name] {
						errs = append(errs, fmt.Errorf("%s: environment variable %s is not one slotgate knows (slotgate --help)", where, e.Name))
					}
				}
				for _, ef := range c.EnvFrom {
					if ef.ConfigMapRef == nil {
						continue
					}
					cm := configMaps[ef.ConfigMapRef.Name]
					if cm == nil {
						continue
					}
					for k := range cm.Data {
						if !known.env[ef.Prefix+k] {
							errs = append(errs, fmt.Errorf("%s: envFrom ConfigMap %s sets %s, which slotgate does not know", where, cm.Name, ef.Prefix+k))
						}
					}
				}
				for _, arg := range append(append([]string{}, c.Command...), c.Args...) {
					if !strings.HasPrefix(arg, "--") || arg == "--" {
						continue
					}
					flag, _, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
					if !known.flags[flag] {
						errs = append(errs, fmt.Errorf("%s: flag --%s is not one slotgate knows (slotgate --help)", where, flag))
					}
				}
			}
		}
	}
	return n, errs
}

// TestSlotgateEnvAndFlags: every variable and flag set on the slotgate
// container in the manifests under kustomize/ and routing/ (the built
// overlays and the Helm renders are checked in their own tests) is one
// the built slotgate --help lists.
func TestSlotgateEnvAndFlags(t *testing.T) {
	known := slotgateHelp(t)
	total := 0
	for _, dir := range []string{kustomizeBase, overlaysDir, routingDir} {
		files, err := walkFiles(dir, ".yaml", ".yml")
		if err != nil {
			t.Errorf("deploy/%s: %v", dir, err)
			continue
		}
		for _, f := range files {
			_, _, objs := checkManifestFiles(t, []string{f})
			n, errs := checkSlotgateSettings(f, objs, known)
			total += n
			reportErrs(t, "", errs)
		}
	}
	if total == 0 {
		t.Errorf("no slotgate container found under deploy/%s", filepath.Dir(kustomizeBase))
	}
}

func TestSlotgateEnvFixtures(t *testing.T) {
	known := parseHelp("--engine-request-limit  DYN_ENGINE_REQUEST_LIMIT\n--request-queue-limit DYN_DYNAMO_REQUEST_QUEUE_LIMIT\n" +
		"--log-level SLOTGATE_LOG_LEVEL\n--engine-url SLOTGATE_ENGINE_URL\n")
	_, _, objs := checkManifestFiles(t, []string{"testdata/manifests/valid/deployment.yaml"})
	n, errs := checkSlotgateSettings("valid", objs, known)
	reportErrs(t, "", errs)
	if n != 1 {
		t.Errorf("found %d slotgate containers, want 1", n)
	}
	_, _, objs = checkManifestFiles(t, []string{"testdata/env/bad-env.yaml"})
	_, errs = checkSlotgateSettings("invalid", objs, known)
	expectErrs(t, errs, "environment variable SLOTGATE_ENGINE_LIMIT is not one slotgate knows",
		"flag --engine-limit is not one slotgate knows", "envFrom ConfigMap slotgate-env sets SLOTGATE_TYPO")
}
