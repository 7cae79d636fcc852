package deploy_test

import (
	"fmt"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/encoding/protojson"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	// The typed_config Any types an Envoy example may name must be in the
	// protobuf registry for protojson to decode them: each import below
	// registers one extension's types. An example that uses another
	// extension fails with "unable to resolve": add its package here.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/health_check/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/priority/previous_priorities/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
)

// checkEnvoyBootstrap decodes an Envoy bootstrap (YAML) strictly into
// envoy.config.bootstrap.v3.Bootstrap with protojson (unknown fields and
// unregistered Any types fail), then runs the protoc-gen-validate rules
// Envoy itself enforces (ValidateAll).
func checkEnvoyBootstrap(src string, y []byte) error {
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		return fmt.Errorf("%s: not YAML: %w", src, err)
	}
	var b bootstrapv3.Bootstrap
	if err := (protojson.UnmarshalOptions{}).Unmarshal(j, &b); err != nil {
		return fmt.Errorf("%s: not an envoy.config.bootstrap.v3.Bootstrap: %w", src, err)
	}
	if err := b.ValidateAll(); err != nil {
		return fmt.Errorf("%s: Envoy's validation: %w", src, err)
	}
	if len(b.GetStaticResources().GetListeners()) == 0 && b.GetDynamicResources() == nil {
		return fmt.Errorf("%s: no listener and no dynamic resources", src)
	}
	return nil
}

// envoyBootstraps finds the Envoy bootstraps in the files: YAML documents
// shaped as one, and ConfigMap data keys holding one.
func envoyBootstraps(t *testing.T, files []string) (map[string][]byte, []error) {
	t.Helper()
	errs, byClass, objs := checkManifestFiles(t, files)
	found := map[string][]byte{}
	for _, d := range byClass[classEnvoy] {
		found[d.source] = d.data
	}
	for _, o := range objs {
		cm, ok := o.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		for k, v := range cm.Data {
			if !strings.HasSuffix(k, ".yaml") && !strings.HasSuffix(k, ".yml") && !strings.HasSuffix(k, ".json") {
				continue
			}
			if c, err := classify(doc{data: []byte(v)}); err == nil && c == classEnvoy {
				found[fmt.Sprintf("ConfigMap %s key %s", cm.Name, k)] = []byte(v)
			}
		}
	}
	return found, errs
}

// TestEnvoyExample: every Envoy bootstrap under routing/ decodes strictly
// into Envoy's own config types and passes Envoy's field validation.
func TestEnvoyExample(t *testing.T) {
	files := requireFiles(t, routingDir, ".yaml", ".yml")
	found, _ := envoyBootstraps(t, files) // manifest errors: TestManifestsDecodeStrictly
	if len(found) == 0 {
		t.Fatalf("no Envoy bootstrap under deploy/%s", routingDir)
	}
	for src, y := range found {
		if err := checkEnvoyBootstrap(src, y); err != nil {
			t.Error(err)
		}
	}
}

func TestEnvoyFixtures(t *testing.T) {
	found, errs := envoyBootstraps(t, []string{"testdata/envoy/valid.yaml"})
	reportErrs(t, "", errs)
	if len(found) != 2 {
		t.Fatalf("found %d bootstraps in the valid fixture, want 2 (a file and a ConfigMap)", len(found))
	}
	for src, y := range found {
		if err := checkEnvoyBootstrap(src, y); err != nil {
			t.Error(err)
		}
	}
	for file, want := range map[string]string{
		"unknown-field.yaml": `unknown field "conect_timeout"`,
		"unknown-type.yaml":  `unable to resolve`,
		"invalid.yaml":       `Envoy's validation`,
	} {
		t.Run(file, func(t *testing.T) {
			found, _ := envoyBootstraps(t, []string{"testdata/envoy/" + file})
			var errs []error
			for src, y := range found {
				if err := checkEnvoyBootstrap(src, y); err != nil {
					errs = append(errs, err)
				}
			}
			expectErrs(t, errs, want)
		})
	}
}
