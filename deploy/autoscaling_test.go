package deploy_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// kedaExample is the KEDA example the test checks.
var kedaExample = filepath.Join("autoscaling", "keda-scaledobject.yaml")

// KEDA's module (github.com/kedacore/keda/v2) drags in every scaler's
// client library, far too much for this module. These structs copy the
// schema of its ScaledObject, field for field (json names, nesting), from
// apis/keda/v1alpha1/scaledobject_types.go and scaletriggers_types.go of
// kedacore/keda v2, and validate() applies the rules of its admission
// webhook and of the Prometheus scaler that a strict decode cannot see.
// The status is left out: a manifest to apply has none, and one that has
// is refused as an unknown field.

type scaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              scaledObjectSpec `json:"spec"`
}

type scaledObjectSpec struct {
	ScaleTargetRef        *kedaScaleTarget    `json:"scaleTargetRef"`
	PollingInterval       *int32              `json:"pollingInterval,omitempty"`
	InitialCooldownPeriod *int32              `json:"initialCooldownPeriod,omitempty"`
	CooldownPeriod        *int32              `json:"cooldownPeriod,omitempty"`
	IdleReplicaCount      *int32              `json:"idleReplicaCount,omitempty"`
	MinReplicaCount       *int32              `json:"minReplicaCount,omitempty"`
	MaxReplicaCount       *int32              `json:"maxReplicaCount,omitempty"`
	Advanced              *kedaAdvancedConfig `json:"advanced,omitempty"`
	Triggers              []kedaScaleTrigger  `json:"triggers"`
	Fallback              *kedaFallback       `json:"fallback,omitempty"`
}

type kedaScaleTarget struct {
	Name                   string `json:"name"`
	APIVersion             string `json:"apiVersion,omitempty"`
	Kind                   string `json:"kind,omitempty"`
	EnvSourceContainerName string `json:"envSourceContainerName,omitempty"`
}

type kedaFallback struct {
	FailureThreshold int32  `json:"failureThreshold"`
	Replicas         int32  `json:"replicas"`
	Behavior         string `json:"behavior,omitempty"`
}

type kedaAdvancedConfig struct {
	HorizontalPodAutoscalerConfig *struct {
		Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
		Name     string                                         `json:"name,omitempty"`
	} `json:"horizontalPodAutoscalerConfig,omitempty"`
	RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
	ScalingModifiers              struct {
		Formula          string                         `json:"formula,omitempty"`
		Target           string                         `json:"target,omitempty"`
		ActivationTarget string                         `json:"activationTarget,omitempty"`
		MetricType       autoscalingv2.MetricTargetType `json:"metricType,omitempty"`
	} `json:"scalingModifiers,omitempty"`
}

type kedaScaleTrigger struct {
	Type              string            `json:"type"`
	Name              string            `json:"name,omitempty"`
	UseCachedMetrics  bool              `json:"useCachedMetrics,omitempty"`
	Metadata          map[string]string `json:"metadata"`
	AuthenticationRef *struct {
		Name string `json:"name"`
		Kind string `json:"kind,omitempty"`
	} `json:"authenticationRef,omitempty"`
	MetricType autoscalingv2.MetricTargetType `json:"metricType,omitempty"`
}

// prometheusMetadata are the Prometheus scaler's metadata keys (KEDA's
// docs, scalers/prometheus), each with how its value must parse.
var prometheusMetadata = map[string]string{
	"serverAddress": "url", "query": "promql", "threshold": "float", "activationThreshold": "float",
	"queryParameters": "string", "namespace": "string", "customHeaders": "string",
	"ignoreNullValues": "bool", "unsafeSsl": "bool", "timeout": "int", "authModes": "string",
}

// validate applies KEDA's rules: a target, at least one trigger, unique
// trigger names, min <= max and idle < min, known enums, and for the
// Prometheus scaler its required metadata, known keys and values that
// parse. It returns every problem.
func (so *scaledObject) validate() error {
	var errs []error
	s := so.Spec
	if s.ScaleTargetRef == nil || s.ScaleTargetRef.Name == "" {
		errs = append(errs, errors.New("spec.scaleTargetRef.name is required"))
	}
	if len(s.Triggers) == 0 {
		errs = append(errs, errors.New("spec.triggers: at least one trigger is required"))
	}
	lo, hi := int32(0), int32(100) // KEDA's defaults
	if s.MinReplicaCount != nil {
		lo = max(*s.MinReplicaCount, 1)
	}
	if s.MaxReplicaCount != nil {
		hi = *s.MaxReplicaCount
	}
	if lo > hi {
		errs = append(errs, fmt.Errorf("spec: minReplicaCount %d is above maxReplicaCount %d", lo, hi))
	}
	if s.IdleReplicaCount != nil && *s.IdleReplicaCount >= lo {
		errs = append(errs, fmt.Errorf("spec: idleReplicaCount %d must be below minReplicaCount %d", *s.IdleReplicaCount, lo))
	}
	if f := s.Fallback; f != nil && !slices.Contains([]string{"", "static", "currentReplicas",
		"currentReplicasIfHigher", "currentReplicasIfLower"}, f.Behavior) {
		errs = append(errs, fmt.Errorf("spec.fallback.behavior: %q is not one of KEDA's", f.Behavior))
	}
	names := map[string]bool{}
	for i, tr := range s.Triggers {
		if tr.Name != "" && names[tr.Name] {
			errs = append(errs, fmt.Errorf("spec.triggers[%d]: name %q is used twice", i, tr.Name))
		}
		names[tr.Name] = true
		if !slices.Contains([]autoscalingv2.MetricTargetType{"", autoscalingv2.AverageValueMetricType,
			autoscalingv2.ValueMetricType, autoscalingv2.UtilizationMetricType}, tr.MetricType) {
			errs = append(errs, fmt.Errorf("spec.triggers[%d].metricType: %q is not a metric target type", i, tr.MetricType))
		}
		if tr.Type == "prometheus" {
			errs = append(errs, checkPrometheusTrigger(i, tr.Metadata)...)
		}
	}
	return errors.Join(errs...)
}

// checkPrometheusTrigger checks a Prometheus trigger's metadata; the query
// is parsed by the caller, against the metrics slotgate exports.
func checkPrometheusTrigger(i int, md map[string]string) []error {
	var errs []error
	for _, k := range []string{"serverAddress", "query", "threshold"} {
		if md[k] == "" {
			errs = append(errs, fmt.Errorf("spec.triggers[%d].metadata.%s is required by the prometheus scaler", i, k))
		}
	}
	for k, v := range md {
		var err error
		switch prometheusMetadata[k] {
		case "":
			err = errors.New("not a metadata key of the prometheus scaler")
		case "float":
			var f float64
			if f, err = strconv.ParseFloat(v, 64); err == nil && f < 0 {
				err = errors.New("negative")
			}
		case "bool":
			_, err = strconv.ParseBool(v)
		case "int":
			_, err = strconv.Atoi(v)
		case "url":
			if !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") {
				err = errors.New("not an http(s) URL")
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.triggers[%d].metadata.%s: %q: %w", i, k, v, err))
		}
	}
	if th, err := strconv.ParseFloat(md["threshold"], 64); err == nil && th <= 0 {
		errs = append(errs, fmt.Errorf("spec.triggers[%d].metadata.threshold: %v must be above 0", i, th))
	}
	return errs
}

// checkScaledObject decodes a ScaledObject strictly, validates it, and
// returns its Prometheus queries for the PromQL check.
func checkScaledObject(src string, b []byte) ([]promExpr, []error) {
	var so scaledObject
	if err := yaml.UnmarshalStrict(b, &so); err != nil {
		return nil, []error{fmt.Errorf("%s: ScaledObject: %w", src, err)}
	}
	var errs []error
	if so.APIVersion != "keda.sh/v1alpha1" || so.Kind != "ScaledObject" {
		errs = append(errs, fmt.Errorf("%s: %s %s, want keda.sh/v1alpha1 ScaledObject", src, so.APIVersion, so.Kind))
	}
	if err := so.validate(); err != nil {
		errs = append(errs, fmt.Errorf("%s: ScaledObject %q: %w", src, so.Name, err))
	}
	var exprs []promExpr
	for i, tr := range so.Spec.Triggers {
		if tr.Type == "prometheus" && tr.Metadata["query"] != "" {
			exprs = append(exprs, promExpr{source: src, context: fmt.Sprintf("trigger %d (%s)", i, tr.Name), expr: tr.Metadata["query"]})
		}
	}
	return exprs, errs
}

// TestKEDAScaledObject: the example decodes strictly into KEDA's schema,
// passes KEDA's rules, scales the Deployment of the kustomize base, and
// its queries parse with Prometheus's parser and name only metrics a
// running slotgate exports, slotgate_queued_tokens among them.
func TestKEDAScaledObject(t *testing.T) {
	b := mustRead(t, kedaExample)
	exprs, errs := checkScaledObject(kedaExample, b)
	reportErrs(t, "", errs)
	var so scaledObject
	if err := yaml.Unmarshal(b, &so); err != nil || so.Spec.ScaleTargetRef == nil {
		t.Fatalf("%s: %v", kedaExample, err)
	}
	deployments := map[string]bool{}
	for _, d := range readDocs(t, requireFiles(t, kustomizeBase, ".yaml")) {
		if tm, err := readTypeMeta(d); err == nil && tm.Kind == "Deployment" {
			deployments[tm.Metadata.Name] = true
		}
	}
	if ref := so.Spec.ScaleTargetRef; ref.Kind != "Deployment" || !deployments[ref.Name] {
		t.Errorf("%s scales %s %q; want a Deployment of deploy/%s (%v)", kedaExample, ref.Kind, ref.Name, kustomizeBase, deployments)
	}
	if !slices.ContainsFunc(exprs, func(e promExpr) bool { return strings.Contains(e.expr, "slotgate_queued_tokens") }) {
		t.Errorf("%s: no trigger reads slotgate_queued_tokens", kedaExample)
	}
	slotgate, engine := exportedMetrics(t)
	reportErrs(t, "", checkExprs(exprs, slotgate, engine, nil))
}

// TestKEDAScaledObjectBroken: each mistake in a copy of the example is
// caught, with an error that names it.
func TestKEDAScaledObjectBroken(t *testing.T) {
	good := string(mustRead(t, kedaExample))
	slotgate := exposedNames("# TYPE slotgate_queued_tokens gauge\n# TYPE dynamo_engine_request gauge\n")
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"misspelt field", "pollingInterval:", "pollInterval:", "unknown field"},
		{"a status", "spec:\n", "status:\n  hpaName: x\nspec:\n", "unknown field"},
		{"min above max", "minReplicaCount: 2", "minReplicaCount: 20", "above maxReplicaCount"},
		{"threshold not a number", `threshold: "32000"`, `threshold: "32k"`, "metadata.threshold"},
		{"threshold 0", `threshold: "6"`, `threshold: "0"`, "must be above 0"},
		{"unknown metadata key", `ignoreNullValues: "false"`, `ignoreNulls: "false"`, "metadata.ignoreNulls"},
		{"no query", "query: sum(dynamo_engine_request", "querry: sum(dynamo_engine_request", "metadata.query is required"},
		{"duplicate trigger names", "name: engine-requests", "name: queued-tokens", "used twice"},
		{"bad fallback behavior", "replicas: 4", "replicas: 4\n    behavior: always", "fallback.behavior"},
		{"query does not parse", "sum(slotgate_queued_tokens{", "sum(slotgate_queued_tokens{{", "does not parse"},
		{"metric slotgate lacks", "slotgate_queued_tokens{", "slotgate_queue_tokens{", "does not export"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(good, tc.old) {
				t.Fatalf("the example no longer holds %q: update the case", tc.old)
			}
			exprs, errs := checkScaledObject("broken", []byte(strings.Replace(good, tc.old, tc.new, 1)))
			errs = append(errs, checkExprs(exprs, slotgate, nil, nil)...)
			expectErrs(t, errs, tc.want)
		})
	}
}
