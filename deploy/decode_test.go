package deploy_test

import (
	"fmt"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	kustypes "sigs.k8s.io/kustomize/api/types"
)

// kinds maps "apiVersion kind" to a new value of the Go type a manifest of
// that kind must decode into, strictly. A kind missing here fails the
// check: add its type rather than letting it through unchecked.
var kinds = map[string]func() any{
	"v1 ConfigMap":             func() any { return new(corev1.ConfigMap) },
	"v1 Secret":                func() any { return new(corev1.Secret) },
	"v1 Service":               func() any { return new(corev1.Service) },
	"v1 ServiceAccount":        func() any { return new(corev1.ServiceAccount) },
	"v1 Namespace":             func() any { return new(corev1.Namespace) },
	"v1 Pod":                   func() any { return new(corev1.Pod) },
	"v1 PersistentVolumeClaim": func() any { return new(corev1.PersistentVolumeClaim) },
	"v1 LimitRange":            func() any { return new(corev1.LimitRange) },

	"apps/v1 Deployment":  func() any { return new(appsv1.Deployment) },
	"apps/v1 StatefulSet": func() any { return new(appsv1.StatefulSet) },
	"apps/v1 DaemonSet":   func() any { return new(appsv1.DaemonSet) },

	"batch/v1 Job":                             func() any { return new(batchv1.Job) },
	"policy/v1 PodDisruptionBudget":            func() any { return new(policyv1.PodDisruptionBudget) },
	"autoscaling/v2 HorizontalPodAutoscaler":   func() any { return new(autoscalingv2.HorizontalPodAutoscaler) },
	"networking.k8s.io/v1 NetworkPolicy":       func() any { return new(networkingv1.NetworkPolicy) },
	"networking.k8s.io/v1 Ingress":             func() any { return new(networkingv1.Ingress) },
	"rbac.authorization.k8s.io/v1 Role":        func() any { return new(rbacv1.Role) },
	"rbac.authorization.k8s.io/v1 RoleBinding": func() any { return new(rbacv1.RoleBinding) },
	"rbac.authorization.k8s.io/v1 ClusterRole": func() any { return new(rbacv1.ClusterRole) },
	"rbac.authorization.k8s.io/v1 ClusterRoleBinding": func() any {
		return new(rbacv1.ClusterRoleBinding)
	},

	"monitoring.coreos.com/v1 PodMonitor":     func() any { return new(monitoringv1.PodMonitor) },
	"monitoring.coreos.com/v1 ServiceMonitor": func() any { return new(monitoringv1.ServiceMonitor) },
	"monitoring.coreos.com/v1 PrometheusRule": func() any { return new(monitoringv1.PrometheusRule) },

	"gateway.networking.k8s.io/v1 HTTPRoute":      func() any { return new(gatewayv1.HTTPRoute) },
	"gateway.networking.k8s.io/v1 GRPCRoute":      func() any { return new(gatewayv1.GRPCRoute) },
	"gateway.networking.k8s.io/v1 Gateway":        func() any { return new(gatewayv1.Gateway) },
	"gateway.networking.k8s.io/v1 ReferenceGrant": func() any { return new(gatewayv1.ReferenceGrant) },

	// InferencePool: sigs.k8s.io/gateway-api-inference-extension is not
	// served by the module proxy here, so these decode strictly into
	// inferencePool below, a copy of its v1 (and v1alpha2) schema.
	"inference.networking.k8s.io/v1 InferencePool":         func() any { return new(inferencePool) },
	"inference.networking.x-k8s.io/v1alpha2 InferencePool": func() any { return new(inferencePoolV1alpha2) },

	// Kustomization files decode into kustomize's own type.
	"kustomize.config.k8s.io/v1beta1 Kustomization": func() any { return new(kustypes.Kustomization) },
	"kustomize.config.k8s.io/v1alpha1 Component":    func() any { return new(kustypes.Kustomization) },
}

// decodeStrict decodes one manifest into the Go type of its kind, failing
// on unknown or duplicate fields and on type errors. It returns the
// decoded object.
func decodeStrict(d doc) (any, error) {
	tm, err := readTypeMeta(d)
	if err != nil {
		return nil, fmt.Errorf("%s: not YAML: %w", d.source, err)
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return nil, fmt.Errorf("%s: no apiVersion or kind", d.source)
	}
	newObj, ok := kinds[tm.APIVersion+" "+tm.Kind]
	if !ok {
		return nil, fmt.Errorf("%s: %s %s: no Go type registered for this apiVersion and kind (known: %s)",
			d.source, tm.APIVersion, tm.Kind, knownKinds())
	}
	obj := newObj()
	if err := yaml.UnmarshalStrict(d.data, obj); err != nil {
		// The object as Kubernetes would read it (unknown fields dropped)
		// still goes to the other checks.
		loose := newObj()
		if yaml.Unmarshal(d.data, loose) != nil {
			loose = nil
		}
		return loose, fmt.Errorf("%s: %s %q: %w", d.source, tm.Kind, tm.Metadata.Name, err)
	}
	if v, ok := obj.(interface{ validate() error }); ok {
		if err := v.validate(); err != nil {
			return nil, fmt.Errorf("%s: %s %q: %w", d.source, tm.Kind, tm.Metadata.Name, err)
		}
	}
	if tm.Metadata.Name == "" && !strings.HasPrefix(tm.APIVersion, "kustomize.config.k8s.io/") {
		return obj, fmt.Errorf("%s: %s has no metadata.name", d.source, tm.Kind)
	}
	return obj, nil
}

func knownKinds() string {
	var ks []string
	for k := range kinds {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}
