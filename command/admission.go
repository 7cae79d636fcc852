package command

import (
	"slices"
	"strings"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/admission/policy"
	"github.com/slotgate/slotgate/config"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
)

// loadPolicy reads the admission policy file, or returns the policy of
// no file: every request admitted, one FIFO queue.
func loadPolicy(cfg config.Config, opts Options) (*policy.Config, error) {
	if cfg.AdmissionConfig == "" {
		return nil, nil
	}
	return policy.Load(cfg.AdmissionConfig, opts.Registry)
}

// classNames lists the policy classes; without a policy, the one default
// class.
func classNames(pol *policy.Config) []string {
	if pol == nil {
		return []string{gate.DefaultClass}
	}
	names := make([]string, len(pol.Classes))
	for i, c := range pol.Classes {
		names[i] = c.Name
	}
	return names
}

// limiterClasses are the limiter's queues of pol's classes; none without
// a policy, which keeps the one FIFO queue.
func limiterClasses(pol *policy.Config) []limiter.Class {
	if pol == nil {
		return nil
	}
	out := make([]limiter.Class, len(pol.Classes))
	for i, c := range pol.Classes {
		out[i] = limiter.Class{Name: c.Name, Quantum: c.Quantum, Limit: c.QueueLimit}
	}
	return out
}

// gatePolicy is the gate's view of pol; nil without a policy.
func gatePolicy(pol *policy.Config) *gate.Policy {
	if pol == nil {
		return nil
	}
	return &gate.Policy{
		Classifier: pol.Classifier, Classes: classNames(pol), DefaultClass: pol.DefaultClass,
		SessionHeader: pol.SessionHeader, CaptureHeaders: captureHeaders(pol),
	}
}

// captureHeaders are the configured headers and those the classifier says
// it reads, lower-case, each once.
func captureHeaders(pol *policy.Config) []string {
	out := slices.Clone(pol.CaptureHeaders)
	if hr, ok := pol.Classifier.(admission.HeaderReader); ok {
		for _, h := range hr.Headers() {
			if h = strings.ToLower(h); !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out
}
