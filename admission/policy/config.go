package policy

import (
	"fmt"
	"io"
	"os"

	"github.com/slotgate/slotgate/admission"
)

// Limits and defaults of the file.
const (
	// MaxSize is the largest admission configuration file accepted, in
	// bytes.
	MaxSize = 1 << 20
	// MaxQuantum is the largest quantum of a class.
	MaxQuantum = 1_000_000
	// FCFS (first come, first served) is the only queue policy.
	FCFS = "fcfs"
	// PassThroughType is the classifier type of a file without
	// request_classifier. A file may name it even when the Registry does
	// not hold it: it is then admission.PassThrough, with no parameters.
	PassThroughType = "pass-through"
	// DefaultSessionHeader is session_header's default.
	DefaultSessionHeader = "x-session-id"
	// DefaultClassName names the only class of a file without
	// policy_classes and default_policy_class.
	DefaultClassName = "default"
)

// Class is one policy class: a queue of its own, served by deficit round
// robin among the classes.
type Class struct {
	// Name is unique, matches [a-z0-9_-]+ and is at most 64 characters.
	Name string
	// QueuePolicy orders the class's waiters: FCFS (the default, and the
	// only policy).
	QueuePolicy string
	// Quantum is the class's deficit-round-robin quantum, its share of
	// the queue's service: 1 to MaxQuantum, 1 by default.
	Quantum int
	// QueueLimit is the most waiters the class may have; 0 (the default)
	// leaves only the shared queue bound Q.
	QueueLimit int
}

// Config is a loaded admission configuration; see the package
// documentation for its invariants.
type Config struct {
	// Path is the file it was loaded from; empty for PassThrough.
	Path string
	// ClassifierType is request_classifier.type, or PassThroughType.
	ClassifierType string
	// Classifier is the one classifier, made by its factory.
	Classifier admission.Classifier
	// DefaultClass is the class of a request no classifier moved.
	DefaultClass string
	// Classes are the policy classes, in file order; never empty.
	Classes []Class
	// SessionHeader is the lower-case name of the header carrying the
	// session identity; DefaultSessionHeader by default.
	SessionHeader string
	// CaptureHeaders are the lower-case names of the headers a classifier
	// may read: SessionHeader first, then capture_headers in file order,
	// without duplicates.
	CaptureHeaders []string
}

// ClassNames returns the names of c.Classes, in order.
func (c *Config) ClassNames() []string {
	names := make([]string, len(c.Classes))
	for i, cl := range c.Classes {
		names[i] = cl.Name
	}
	return names
}

// PassThrough returns the configuration without a file: the pass-through
// classifier, one class named DefaultClassName, and the default session
// header.
func PassThrough() *Config {
	return &Config{
		ClassifierType: PassThroughType,
		Classifier:     admission.PassThrough{},
		DefaultClass:   DefaultClassName,
		Classes:        []Class{defaultClass(DefaultClassName)},
		SessionHeader:  DefaultSessionHeader,
		CaptureHeaders: []string{DefaultSessionHeader},
	}
}

func defaultClass(name string) Class { return Class{Name: name, QueuePolicy: FCFS, Quantum: 1} }

// Load reads the file at path, at most MaxSize bytes, and parses it with
// Parse. It returns the Config, or an error naming the file: it could not
// be read, or is too large, or Parse's error.
func Load(path string, reg *admission.Registry) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("admission config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("admission config: %w", err)
	}
	return Parse(path, data, reg)
}

// Parse parses data, the content of the file at path (used only in
// messages), looks the classifier type up in reg (nil: an empty
// Registry), validates its parameters with the provider and makes the
// classifier with the factory. It returns the Config, or every problem
// found joined with errors.Join, each naming path, the line when known,
// the field and the problem. A provider's or factory's error is wrapped,
// so errors.Is and errors.As see it.
func Parse(path string, data []byte, reg *admission.Registry) (*Config, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s: admission config is larger than %d bytes", path, MaxSize)
	}
	root, err := document(path, data)
	if err != nil {
		return nil, err
	}
	if reg == nil {
		reg = admission.NewRegistry()
	}
	d := &decoder{file: path}
	cfg := d.config(root, reg)
	if err := d.err(); err != nil {
		return nil, err
	}
	cfg.Path = path
	return cfg, nil
}
