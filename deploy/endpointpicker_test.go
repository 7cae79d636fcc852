package deploy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The endpoint picker's configuration is not a Kubernetes object (the EPP
// reads it from a file at start-up), and its Go module is not served by
// the module proxy here, so these structs copy the part of its schema the
// example uses, field for field (json names, nesting), from
// kubernetes-sigs/gateway-api-inference-extension: apix/config/v1alpha1
// (EndpointPickerConfig, PluginSpec, SchedulingProfile,
// SchedulingPlugin) and the parameters of the metrics-data-source and
// core-metrics-extractor plugins
// (pkg/epp/framework/plugins/datalayer/source/metrics/datasource.go,
// .../extractor/metrics/factories.go). A strict decode catches misspelt
// fields, which the EPP itself would silently ignore in the parameters.

type endpointPickerConfig struct {
	APIVersion         string              `json:"apiVersion"`
	Kind               string              `json:"kind"`
	FeatureGates       []string            `json:"featureGates,omitempty"`
	Plugins            []eppPlugin         `json:"plugins"`
	SchedulingProfiles []schedulingProfile `json:"schedulingProfiles"`
}

type eppPlugin struct {
	Name       string          `json:"name,omitempty"`
	Type       string          `json:"type"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

type schedulingProfile struct {
	Name    string `json:"name"`
	Plugins []struct {
		PluginRef string `json:"pluginRef"`
		Weight    *int   `json:"weight,omitempty"`
	} `json:"plugins"`
}

type metricsDataSourceParams struct {
	Scheme             string `json:"scheme"`
	Path               string `json:"path"`
	InsecureSkipVerify bool   `json:"insecureSkipVerify"`
}

type metricsExtractorParams struct {
	EngineLabelKey string `json:"engineLabelKey"`
	DefaultEngine  string `json:"defaultEngine"`
	EngineConfigs  []struct {
		Name                string `json:"name"`
		QueuedRequestsSpec  string `json:"queuedRequestsSpec"`
		RunningRequestsSpec string `json:"runningRequestsSpec"`
		KVUsageSpec         string `json:"kvUsageSpec"`
		LoRASpec            string `json:"loraSpec"`
		CacheInfoSpec       string `json:"cacheInfoSpec"`
	} `json:"engineConfigs"`
}

// slotgatePodGauges are the names slotgate serves on its proxy port for a
// picker; the test finds each as a string constant in slotgate's source,
// so that renaming one there fails here.
var slotgatePodGauges = []string{
	"slotgate_pod_waiting_requests", "slotgate_pod_running_requests", "slotgate_pod_kv_cache_usage_perc",
}

// slotgateProxyPort is slotgate's --listen port in every manifest.
const slotgateProxyPort = 8080

// TestEndpointPickerConfig: the example EPP configuration decodes strictly,
// scrapes /metrics, and its slotgate engine config reads, as the default
// engine, exactly the gauges slotgate serves; the InferencePool sends the
// picker's scrapes and the requests to slotgate's proxy port.
func TestEndpointPickerConfig(t *testing.T) {
	cfg := readEPPConfig(t, filepath.Join(routingDir, "endpointpicker.yaml"))
	if cfg.Kind != "EndpointPickerConfig" || !strings.HasSuffix(cfg.APIVersion, "/v1alpha1") {
		t.Errorf("apiVersion %q kind %q, want an EndpointPickerConfig", cfg.APIVersion, cfg.Kind)
	}
	var source metricsDataSourceParams
	decodeParams(t, cfg, "metrics-data-source", &source)
	if source.Path != "/metrics" || source.Scheme != "http" {
		t.Errorf("metrics-data-source scrapes %s://…%s, want http and /metrics (slotgate's proxy port answers there)", source.Scheme, source.Path)
	}
	var ext metricsExtractorParams
	decodeParams(t, cfg, "core-metrics-extractor", &ext)
	if ext.DefaultEngine != "slotgate" {
		t.Errorf("defaultEngine %q, want slotgate", ext.DefaultEngine)
	}
	src, err := os.ReadFile(filepath.Join("..", "load", "exposition", "pod.go"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ec := range ext.EngineConfigs {
		if ec.Name != "slotgate" {
			continue
		}
		found = true
		got := []string{specName(ec.QueuedRequestsSpec), specName(ec.RunningRequestsSpec), specName(ec.KVUsageSpec)}
		for i, want := range slotgatePodGauges {
			if got[i] != want {
				t.Errorf("engine config slotgate reads %q, want %q", got[i], want)
			}
			if !strings.Contains(string(src), `"`+want+`"`) {
				t.Errorf("slotgate does not serve %q (not in load/exposition/pod.go)", want)
			}
		}
	}
	if !found {
		t.Error("no engine config named slotgate")
	}
	checkPoolPort(t)
}

// specName is the metric name of a picker spec, "name{label=value}".
func specName(spec string) string {
	name, _, _ := strings.Cut(strings.TrimSpace(spec), "{")
	return strings.TrimSpace(name)
}

// readEPPConfig reads the EPP configuration from the ConfigMap in file,
// key config.yaml, decoded strictly.
func readEPPConfig(t *testing.T, file string) endpointPickerConfig {
	t.Helper()
	docs := readDocs(t, []string{file})
	for _, d := range docs {
		var cm corev1.ConfigMap
		if err := yaml.UnmarshalStrict(d.data, &cm); err != nil || cm.Kind != "ConfigMap" {
			continue
		}
		text, ok := cm.Data["config.yaml"]
		if !ok {
			continue
		}
		var cfg endpointPickerConfig
		if err := yaml.UnmarshalStrict([]byte(text), &cfg); err != nil {
			t.Fatalf("%s: ConfigMap %s config.yaml: %v", file, cm.Name, err)
		}
		return cfg
	}
	t.Fatalf("%s: no ConfigMap with a config.yaml key", file)
	return endpointPickerConfig{}
}

// decodeParams decodes, strictly, the parameters of the one plugin of type
// typ.
func decodeParams(t *testing.T, cfg endpointPickerConfig, typ string, into any) {
	t.Helper()
	var matches []eppPlugin
	for _, p := range cfg.Plugins {
		if p.Type == typ {
			matches = append(matches, p)
		}
	}
	if len(matches) != 1 {
		t.Fatalf("%d plugins of type %s, want 1", len(matches), typ)
	}
	if err := yaml.UnmarshalStrict(matches[0].Parameters, into); err != nil {
		t.Fatalf("plugin %s parameters: %v", typ, err)
	}
}

// checkPoolPort: the InferencePool's target port is slotgate's.
func checkPoolPort(t *testing.T) {
	t.Helper()
	for _, d := range readDocs(t, []string{filepath.Join(routingDir, "inferencepool.yaml")}) {
		var pool inferencePool
		if yaml.Unmarshal(d.data, &pool) != nil || pool.Kind != "InferencePool" {
			continue
		}
		if len(pool.Spec.TargetPorts) != 1 || pool.Spec.TargetPorts[0].Number != slotgateProxyPort {
			t.Errorf("InferencePool %s targetPorts %v, want [%d]: the picker scrapes and routes to the target port", pool.Name,
				pool.Spec.TargetPorts, slotgateProxyPort)
		}
		return
	}
	t.Errorf("no InferencePool in deploy/%s/inferencepool.yaml", routingDir)
}

// TestEndpointPickerConfigStrict: the strict decode catches a misspelt
// extractor field, which the EPP would ignore.
func TestEndpointPickerConfigStrict(t *testing.T) {
	var ext metricsExtractorParams
	err := yaml.UnmarshalStrict([]byte(`{"engineConfigs":[{"name":"slotgate","queuedRequestSpec":"x"}]}`), &ext)
	if err == nil || !strings.Contains(err.Error(), "queuedRequestSpec") {
		t.Errorf("misspelt queuedRequestsSpec decoded: %v", err)
	}
}
