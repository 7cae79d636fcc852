package deploy_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The directories the other deployment files live in, relative to this
// module (deploy/). Each check walks its directory, so it checks whatever
// is there, and fails when a required directory is missing or empty.
const (
	kustomizeBase  = "kustomize/base"
	overlaysDir    = "kustomize/overlays"
	routingDir     = "routing"
	helmChartDir   = "helm/slotgate"
	monitoringDir  = "monitoring"
	dockerfilePath = "../Dockerfile"
)

// requiredOverlays are the kustomize overlays the deployment must ship.
var requiredOverlays = []string{"decode", "prefill", "sglang", "trtllm-grpc"}

// doc is one YAML document of a file: where it came from and its bytes.
type doc struct {
	source string // file path, with "#n" for the n-th document (1-based)
	data   []byte
}

// splitYAML splits multi-document YAML into its non-empty documents.
func splitYAML(source string, data []byte) ([]doc, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []doc
	for n := 1; ; n++ {
		b, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, fmt.Errorf("%s: splitting YAML: %w", source, err)
		}
		if isEmptyYAML(b) {
			continue
		}
		docs = append(docs, doc{source: fmt.Sprintf("%s#%d", source, n), data: b})
	}
}

// isEmptyYAML reports whether a document holds only comments, blank lines
// and the "---" separator.
func isEmptyYAML(b []byte) bool {
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line == "---" || strings.HasPrefix(line, "#") {
			continue
		}
		return false
	}
	return true
}

// walkFiles returns the files under dir (recursively) whose names end in
// one of exts, sorted. A missing dir is an error.
func walkFiles(dir string, exts ...string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		for _, ext := range exts {
			if strings.HasSuffix(d.Name(), ext) {
				files = append(files, path)
				break
			}
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// requireFiles is walkFiles that fails the test when dir is missing or
// holds no such file.
func requireFiles(t *testing.T, dir string, exts ...string) []string {
	t.Helper()
	files, err := walkFiles(dir, exts...)
	if err != nil {
		t.Fatalf("required directory deploy/%s: %v", dir, err)
	}
	if len(files) == 0 {
		t.Fatalf("required directory deploy/%s holds no %s file", dir, strings.Join(exts, " or "))
	}
	return files
}

// readDocs reads every YAML document of the files.
func readDocs(t *testing.T, files []string) []doc {
	t.Helper()
	var docs []doc
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := splitYAML(f, b)
		if err != nil {
			t.Error(err)
		}
		docs = append(docs, ds...)
	}
	return docs
}

// typeMeta is what every Kubernetes object starts with.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

func readTypeMeta(d doc) (typeMeta, error) {
	var tm typeMeta
	err := yaml.Unmarshal(d.data, &tm)
	return tm, err
}

// reportErrs reports each error on t, prefixed.
func reportErrs(t *testing.T, prefix string, errs []error) {
	t.Helper()
	for _, err := range errs {
		if prefix != "" {
			t.Errorf("%s: %v", prefix, err)
		} else {
			t.Error(err)
		}
	}
}

// expectErrs checks that errs contains, for each want, an error whose text
// contains it: how the negative fixtures prove a check can fail.
func expectErrs(t *testing.T, errs []error, wants ...string) {
	t.Helper()
	if len(errs) == 0 {
		t.Errorf("no error; want errors containing %q", wants)
		return
	}
	for _, w := range wants {
		found := false
		for _, err := range errs {
			if strings.Contains(err.Error(), w) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no error contains %q; got:\n%v", w, errors.Join(errs...))
		}
	}
}

// mustRead reads a file or fails the test.
func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
