package deploy_test

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sigs.k8s.io/gateway-api-inference-extension is not served by the Go
// module proxy here, so an InferencePool cannot decode into its own Go
// type. These structs copy its schema instead, field for field (json
// names, nesting), from api/v1/inferencepool_types.go and
// api/v1/shared_types.go of kubernetes-sigs/gateway-api-inference-extension
// v1.6.0, and validate() applies its kubebuilder rules (MinItems, MaxItems,
// enums, the port rule). A strict decode into them catches unknown and
// misplaced fields as the real type would.

type inferencePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              inferencePoolSpec `json:"spec"`
	Status            struct {
		Parents []struct {
			Conditions     []metav1.Condition `json:"conditions,omitempty"`
			ParentRef      parentReference    `json:"parentRef"`
			ControllerName string             `json:"controllerName,omitempty"`
		} `json:"parents,omitempty"`
	} `json:"status,omitempty"`
}

type inferencePoolSpec struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels,omitempty"`
	} `json:"selector"`
	TargetPorts       []poolPort         `json:"targetPorts,omitempty"`
	AppProtocol       string             `json:"appProtocol,omitempty"`
	EndpointPickerRef *endpointPickerRef `json:"endpointPickerRef,omitempty"`
}

type poolPort struct {
	Number int32 `json:"number,omitempty"`
}

type endpointPickerRef struct {
	Group       *string   `json:"group,omitempty"`
	Kind        string    `json:"kind,omitempty"`
	Name        string    `json:"name,omitempty"`
	Port        *poolPort `json:"port,omitempty"`
	FailureMode string    `json:"failureMode,omitempty"`
}

type parentReference struct {
	Group     *string `json:"group,omitempty"`
	Kind      string  `json:"kind,omitempty"`
	Name      string  `json:"name,omitempty"`
	Namespace string  `json:"namespace,omitempty"`
}

func (p *inferencePool) validate() error {
	var errs []error
	s := p.Spec
	if n := len(s.Selector.MatchLabels); n < 1 || n > 64 {
		errs = append(errs, fmt.Errorf("spec.selector.matchLabels: want 1 to 64 labels, got %d", n))
	}
	if n := len(s.TargetPorts); n < 1 || n > 8 {
		errs = append(errs, fmt.Errorf("spec.targetPorts: want 1 to 8 ports, got %d", n))
	}
	seen := map[int32]bool{}
	for i, tp := range s.TargetPorts {
		if tp.Number < 1 || tp.Number > 65535 {
			errs = append(errs, fmt.Errorf("spec.targetPorts[%d].number: %d is not a port", i, tp.Number))
		}
		if seen[tp.Number] {
			errs = append(errs, fmt.Errorf("spec.targetPorts: port number must be unique: %d", tp.Number))
		}
		seen[tp.Number] = true
	}
	switch s.AppProtocol {
	case "", "http", "kubernetes.io/h2c":
	default:
		errs = append(errs, fmt.Errorf("spec.appProtocol: %q is not http or kubernetes.io/h2c", s.AppProtocol))
	}
	if r := s.EndpointPickerRef; r != nil {
		if r.Name == "" {
			errs = append(errs, errors.New("spec.endpointPickerRef.name is required"))
		}
		if (r.Kind == "" || r.Kind == "Service") && r.Port == nil {
			errs = append(errs, errors.New("spec.endpointPickerRef: port is required when kind is 'Service' or unspecified"))
		}
		if r.Port != nil && (r.Port.Number < 1 || r.Port.Number > 65535) {
			errs = append(errs, fmt.Errorf("spec.endpointPickerRef.port.number: %d is not a port", r.Port.Number))
		}
		switch r.FailureMode {
		case "", "FailOpen", "FailClose":
		default:
			errs = append(errs, fmt.Errorf("spec.endpointPickerRef.failureMode: %q is not FailOpen or FailClose", r.FailureMode))
		}
	}
	return errors.Join(errs...)
}

// inferencePoolV1alpha2 is the older inference.networking.x-k8s.io/v1alpha2
// schema (api/v1alpha2 of the same repository before v1.0).
type inferencePoolV1alpha2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Selector         map[string]string `json:"selector"`
		TargetPortNumber int32             `json:"targetPortNumber"`
		ExtensionRef     *struct {
			Group       *string `json:"group,omitempty"`
			Kind        *string `json:"kind,omitempty"`
			Name        string  `json:"name"`
			PortNumber  *int32  `json:"portNumber,omitempty"`
			FailureMode *string `json:"failureMode,omitempty"`
		} `json:"extensionRef,omitempty"`
	} `json:"spec"`
	Status map[string]any `json:"status,omitempty"`
}

func (p *inferencePoolV1alpha2) validate() error {
	var errs []error
	if len(p.Spec.Selector) == 0 {
		errs = append(errs, errors.New("spec.selector: at least one label is required"))
	}
	if n := p.Spec.TargetPortNumber; n < 1 || n > 65535 {
		errs = append(errs, fmt.Errorf("spec.targetPortNumber: %d is not a port", n))
	}
	return errors.Join(errs...)
}
