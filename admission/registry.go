package admission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Parameters are a classifier's configuration parameters, as JSON
// (converted from the YAML file).
type Parameters struct {
	raw json.RawMessage
}

// NewParameters returns Parameters holding raw JSON; nil or empty is an
// empty object.
func NewParameters(raw []byte) Parameters {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	return Parameters{raw: raw}
}

// Decode decodes the parameters into v strictly: an unknown field, a
// wrong type or trailing data is an error naming it.
func (p Parameters) Decode(v any) error {
	raw := p.raw
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err // the caller says these were the parameters
	}
	if dec.More() {
		return errors.New("trailing data after the parameters")
	}
	return nil
}

// Context is what a factory knows of the sidecar when it makes a
// classifier.
type Context struct {
	// Classes are the configured policy class names.
	Classes []string
	// DefaultClass is the class of a request nobody classified otherwise.
	DefaultClass string
}

// Factory makes a classifier; it is called once at start-up.
type Factory func(Context) (Classifier, error)

// Provider validates parameters and returns a Factory; an invalid
// parameter is an error naming it.
type Provider func(Parameters) (Factory, error)

// Registry maps type names to providers. It is safe for concurrent use.
type Registry struct {
	mu        sync.Mutex
	providers map[string]Provider
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{providers: make(map[string]Provider)} }

// ErrDuplicate is wrapped by Register's error for a type already
// registered.
var ErrDuplicate = errors.New("admission: classifier type already registered")

// Register adds a provider under typeName; a name registered twice, an
// empty name or a nil provider is an error.
func (r *Registry) Register(typeName string, p Provider) error {
	if typeName == "" || p == nil {
		return errors.New("admission: Register needs a type name and a provider")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.providers[typeName]; ok {
		return fmt.Errorf("%w: %q", ErrDuplicate, typeName)
	}
	r.providers[typeName] = p
	return nil
}

// Provider returns the provider of typeName, or an error listing the
// registered types.
func (r *Registry) Provider(typeName string) (Provider, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.providers[typeName]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("unknown classifier type %q (registered: %v)", typeName, r.typesLocked())
}

// Types returns the registered type names, sorted.
func (r *Registry) Types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.typesLocked()
}

func (r *Registry) typesLocked() []string {
	out := make([]string, 0, len(r.providers))
	for t := range r.providers {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
