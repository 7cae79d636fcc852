// Package policy loads slotgate's admission configuration file
// (--admission-config, SLOTGATE_ADMISSION_CONFIG): which request
// classifier runs, with which parameters, and the policy classes the
// overflow queue is split into. Its shape is the part of Dynamo's
// router-policy YAML that applies to one worker:
//
//	request_classifier:          # optional; absent: pass-through
//	  type: queue-budget         # a type registered in the Registry
//	  parameters:                # optional mapping, handed to the provider as JSON
//	    max_wait_ms: 2000
//	session_header: x-session-id # optional; the default
//	capture_headers: [x-agent-id, x-priority]  # optional header names
//	default_policy_class: interactive          # required with policy_classes
//	policy_classes:              # optional list, in serving order
//	  - name: interactive        # required, unique, [a-z0-9_-], at most 64 characters
//	    queue_policy: fcfs       # optional; fcfs (first come, first served) is the only one
//	    quantum: 4               # optional, 1 to 1000000, default 1: the class's DRR share
//	    queue_limit: 8           # optional, >= 0; 0: only the shared queue bound limits it
//
// Dynamo's fields that have no meaning on a worker (default_policy_family,
// uncached_isl_buckets, policy_family, cache_bucket,
// prefill_busy_threshold_frac) are unknown fields here, and refused.
//
// Loading is strict. An unknown or repeated key (inside parameters, a
// repeated key only: which keys they may have is the provider's to say),
// a value of the wrong type, an unknown classifier type, parameters the
// provider refuses, a factory error (for example a classifier naming a
// class that is not configured), a default class that is not among the
// classes, more than one YAML document, or a file over MaxSize stops
// loading. Each problem is reported as "FILE:LINE: FIELD: PROBLEM"
// (without LINE when it is not known, e.g. for a missing field), and the
// problems found are returned together (errors.Join), the first 100 of
// them. The factory is called only when nothing else is wrong, so that it
// sees the right classes.
//
// A key whose value is null (for example "quantum:" with nothing after
// it) counts as absent. An empty file, or one of comments only, is a
// valid pass-through configuration. YAML anchors and aliases are
// followed; merge keys ("<<") are accepted only inside parameters.
// Parameters reach the provider as the equivalent JSON: numbers stay
// numbers, and a number or boolean key becomes its text.
//
// Invariants of a Config returned without error:
//
//   - Classes is never empty; class names are unique, match [a-z0-9_-]+
//     and are at most 64 characters; QueuePolicy is FCFS, Quantum is from
//     1 to MaxQuantum and QueueLimit is >= 0.
//   - DefaultClass is the name of one of Classes.
//   - Classifier is non-nil; ClassifierType is non-empty.
//   - SessionHeader is a valid, lower-case header name; CaptureHeaders are
//     valid, lower-case, free of duplicates and contain SessionHeader
//     (first).
//   - The classifier's factory was called exactly once, with the class
//     names in file order and DefaultClass.
package policy
