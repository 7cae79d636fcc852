package builtin

import (
	"context"
	"slices"
	"strings"

	"github.com/slotgate/slotgate/admission"
)

type headerClassParams struct {
	Header  string   `json:"header"`
	Allow   []string `json:"allow"`
	Default string   `json:"default"`
}

// headerClassProvider validates header (a lower-case header name), allow
// (a non-empty list of distinct, non-empty class names) and default (a
// class name). Its factory checks that every allowed class and the default
// are configured policy classes.
//
// The header must be among the captured headers (the configuration loader
// adds it): Classify sees only those.
func headerClassProvider(p admission.Parameters) (admission.Factory, error) {
	var params headerClassParams
	if err := decode(HeaderClass, p, &params); err != nil {
		return nil, err
	}
	if err := params.validate(); err != nil {
		return nil, err
	}
	return params.factory, nil
}

func (p headerClassParams) validate() error {
	ps := problems{typeName: HeaderClass}
	switch {
	case p.Header == "":
		ps.add("header is required")
	case !isLowerToken(p.Header):
		ps.add("header must be a lower-case header name, got %q", p.Header)
	}
	if len(p.Allow) == 0 {
		ps.add("allow must list at least one policy class")
	}
	for i, name := range p.Allow {
		switch {
		case name == "":
			ps.add("allow[%d] must not be empty", i)
		case slices.Index(p.Allow, name) < i:
			ps.add("allow lists %q more than once", name)
		}
	}
	if p.Default == "" {
		ps.add("default is required")
	}
	return ps.err()
}

func (p headerClassParams) factory(ctx admission.Context) (admission.Classifier, error) {
	ps := problems{typeName: HeaderClass}
	var unknown []string
	for _, name := range p.Allow {
		if !slices.Contains(ctx.Classes, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		ps.add("allow names policy classes that are not configured: %q (configured: %q)", unknown, ctx.Classes)
	}
	if !slices.Contains(ctx.Classes, p.Default) {
		ps.add("default names a policy class that is not configured: %q (configured: %q)", p.Default, ctx.Classes)
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	allow := make(map[string]bool, len(p.Allow))
	for _, name := range p.Allow {
		allow[name] = true
	}
	return &headerClass{header: p.Header, allow: allow, def: p.Default}, nil
}

// isLowerToken reports whether s is a header field name (an RFC 9110
// token) without upper-case letters.
func isLowerToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// headerClass sets the policy class from a captured header.
type headerClass struct {
	noEvents
	header string
	allow  map[string]bool
	def    string
}

// Classify sets r's policy class to the header's value when it is in the
// allow-list (compared exactly), and to the default otherwise, including
// when the header is absent. It always admits.
func (h *headerClass) Classify(_ context.Context, r *admission.Request) error {
	if v, ok := r.Header(h.header); ok && h.allow[v] {
		r.SetPolicyClass(v)
		return nil
	}
	r.SetPolicyClass(h.def)
	return nil
}

// Headers names the header the classifier reads, so that slotgate
// captures it without the configuration listing it again.
func (h *headerClass) Headers() []string { return []string{h.header} }
