package policy

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/slotgate/slotgate/admission"
)

// classifier sets cfg's classifier from request_classifier: absent, the
// pass-through; otherwise the registered type's provider validates the
// parameters and, when nothing else is wrong (the factory must see the
// right classes), its factory makes the classifier.
func (d *decoder) classifier(f field, reg *admission.Registry, cfg *Config) {
	if !f.set() {
		cfg.ClassifierType, cfg.Classifier = PassThroughType, admission.PassThrough{}
		return
	}
	const at = "request_classifier"
	fs := d.fields(f.val, at, classifierFields...)
	typ, ok := d.str(fs["type"], at+".type")
	if !ok {
		if resolve(f.val).Kind == yaml.MappingNode && !fs["type"].set() {
			d.add(f.key, at+".type", "required")
		}
		return
	}
	where := fs["type"].val // the line of parameters' problems
	if fs["parameters"].val != nil {
		where = fs["parameters"].val
	}
	params, paramsOK := d.parameters(fs["parameters"])
	provider := d.provider(fs["type"].val, typ, reg)
	if provider == nil || !paramsOK {
		return
	}
	factory, err := provider(params)
	switch {
	case err != nil:
		d.wrap(where, at+".parameters", "", err)
		return
	case factory == nil:
		d.add(fs["type"].val, at+".type", "the provider of %q returned no factory", typ)
		return
	case !d.ok():
		return
	}
	c, err := factory(admission.Context{Classes: cfg.ClassNames(), DefaultClass: cfg.DefaultClass})
	switch {
	case err != nil:
		d.wrap(f.key, at, fmt.Sprintf("making the %q classifier", typ), err)
	case c == nil:
		d.add(f.key, at, "the factory of %q returned no classifier", typ)
	default:
		cfg.ClassifierType, cfg.Classifier = typ, c
	}
}

// provider returns the provider of typ, or nil after reporting an unknown
// type with the registered ones. PassThroughType is known even when reg
// does not hold it.
func (d *decoder) provider(n *yaml.Node, typ string, reg *admission.Registry) admission.Provider {
	if p, err := reg.Provider(typ); err == nil {
		return p
	}
	if typ == PassThroughType {
		return passThrough
	}
	types := reg.Types()
	if !contains(types, PassThroughType) {
		types = append(types, PassThroughType)
		sort.Strings(types)
	}
	if typ == "" {
		d.add(n, "request_classifier.type", "must not be empty (registered types: %s)", strings.Join(types, ", "))
	} else {
		d.add(n, "request_classifier.type", "unknown classifier type %q (registered types: %s)", clip(typ), strings.Join(types, ", "))
	}
	return nil
}

// passThrough is the provider of PassThroughType when the Registry has
// none: it takes no parameters.
func passThrough(p admission.Parameters) (admission.Factory, error) {
	if err := p.Decode(&struct{}{}); err != nil {
		return nil, err
	}
	return func(admission.Context) (admission.Classifier, error) { return admission.PassThrough{}, nil }, nil
}

// parameters converts request_classifier.parameters, a mapping, to JSON:
// absent or null is an empty object. ok is false when the value is not a
// mapping or cannot be written as JSON (reported).
func (d *decoder) parameters(f field) (p admission.Parameters, ok bool) {
	const at = "request_classifier.parameters"
	if !f.set() {
		return admission.NewParameters(nil), true
	}
	n := resolve(f.val)
	if n.Kind != yaml.MappingNode {
		d.add(f.val, at, "must be a mapping, got %s", kind(n))
		return p, false
	}
	var v any
	if err := n.Decode(&v); err != nil {
		d.report(yamlErrors(d.file, line(f.val), at, err)...)
		return p, false
	}
	v, err := jsonValue(v)
	if err == nil {
		var raw []byte
		if raw, err = json.Marshal(v); err == nil {
			return admission.NewParameters(raw), true
		}
	}
	d.wrap(f.val, at, "cannot be written as JSON", err)
	return p, false
}

// jsonValue returns v, decoded from YAML, with every mapping made a
// map[string]any, as encoding/json needs: a scalar key is written as its
// text (JSON keys are strings), any other key is an error.
func jsonValue(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			e, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			v[k] = e
		}
		return v, nil
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			switch k.(type) {
			case nil, map[string]any, map[any]any, []any:
				return nil, fmt.Errorf("a key is %s; keys must be strings or numbers", describe(k))
			}
			key := fmt.Sprint(k)
			if _, dup := out[key]; dup {
				return nil, fmt.Errorf("key %q is given twice", key)
			}
			e, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[key] = e
		}
		return out, nil
	case []any:
		for i, e := range v {
			e, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			v[i] = e
		}
		return v, nil
	}
	return v, nil
}

func describe(k any) string {
	switch k.(type) {
	case nil:
		return "null"
	case []any:
		return "a list"
	}
	return "a mapping"
}
