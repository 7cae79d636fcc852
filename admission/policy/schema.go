package policy

import (
	"math"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/slotgate/slotgate/admission"
)

// The file's fields.
var (
	topFields        = []string{"request_classifier", "session_header", "capture_headers", "default_policy_class", "policy_classes"}
	classifierFields = []string{"type", "parameters"}
	classFields      = []string{"name", "queue_policy", "quantum", "queue_limit"}
)

const maxNameLen = 64

// config builds the Config of the file's root node (nil: no document),
// recording every problem; the Config is meaningful only when there is
// none.
func (d *decoder) config(root *yaml.Node, reg *admission.Registry) *Config {
	top := map[string]field{}
	if root != nil && !isNull(resolve(root)) {
		top = d.fields(root, "", topFields...)
	}
	cfg := &Config{SessionHeader: DefaultSessionHeader}
	if f := top["session_header"]; f.set() {
		if h, ok := d.header(f.val, "session_header"); ok {
			cfg.SessionHeader = h
		}
	}
	cfg.CaptureHeaders = d.captureHeaders(top["capture_headers"], cfg.SessionHeader)
	cfg.Classes, cfg.DefaultClass = d.classes(top["policy_classes"], top["default_policy_class"])
	d.classifier(top["request_classifier"], reg, cfg)
	return cfg
}

// header returns a header name, lower-cased, reporting one that is not an
// HTTP token.
func (d *decoder) header(n *yaml.Node, at string) (string, bool) {
	s, ok := d.str(field{val: n}, at)
	if !ok {
		if isNull(resolve(n)) {
			d.add(n, at, "must be a header name, got null")
		}
		return "", false
	}
	if !isToken(s) {
		d.add(n, at, "must be a header name (letters, digits and !#$%%&'*+-.^_`|~), got %q", clip(s))
		return "", false
	}
	return strings.ToLower(s), true
}

// isToken reports whether s is an HTTP token (RFC 9110 §5.6.2), which a
// header name must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// captureHeaders returns session first, then the listed headers in order,
// without duplicates.
func (d *decoder) captureHeaders(f field, session string) []string {
	out := []string{session}
	seen := map[string]bool{session: true}
	for i, n := range d.list(f, "capture_headers") {
		if d.stop() {
			break
		}
		if h, ok := d.header(n, index("capture_headers", i)); ok && !seen[h] {
			out = append(out, h)
			seen[h] = true
		}
	}
	return out
}

// classes returns the policy classes and the default class. Without
// policy_classes, the one class is the default class, named by
// default_policy_class or DefaultClassName.
func (d *decoder) classes(list, def field) ([]Class, string) {
	defName, defSet := d.str(def, "default_policy_class")
	items := d.list(list, "policy_classes")
	if len(items) == 0 {
		if !defSet {
			return []Class{defaultClass(DefaultClassName)}, DefaultClassName
		}
		d.checkName(def.val, "default_policy_class", defName)
		return []Class{defaultClass(defName)}, defName
	}
	classes := make([]Class, 0, len(items))
	seen := make(map[string]int, len(items)) // name → line
	for i, n := range items {
		if d.stop() {
			break
		}
		c := d.class(n, index("policy_classes", i))
		if c.Name == "" {
			continue
		}
		if first, dup := seen[c.Name]; dup {
			d.add(n, index("policy_classes", i)+".name", "class %q is already defined at line %d", clip(c.Name), first)
			continue
		}
		seen[c.Name] = line(n)
		classes = append(classes, c)
	}
	switch _, found := seen[defName]; {
	case !def.set():
		d.add(nil, "default_policy_class", "required when policy_classes is set (classes: %s)", names(classes))
	case defSet && !found:
		d.add(def.val, "default_policy_class", "%q is not one of policy_classes (classes: %s)", clip(defName), names(classes))
	}
	return classes, defName
}

func names(classes []Class) string {
	s := make([]string, len(classes))
	for i, c := range classes {
		s[i] = c.Name
	}
	return strings.Join(s, ", ")
}

// class returns one policy class; its Name is empty when the name is
// missing (which is reported). Other problems are reported and leave the
// field at its default.
func (d *decoder) class(n *yaml.Node, at string) Class {
	f := d.fields(n, at, classFields...)
	c := defaultClass("")
	if resolve(n).Kind != yaml.MappingNode {
		return c
	}
	switch name, ok := d.str(f["name"], path(at, "name")); {
	case !ok && !f["name"].set():
		d.add(n, path(at, "name"), "required")
	case ok:
		d.checkName(f["name"].val, path(at, "name"), name)
		c.Name = name
	}
	if p, ok := d.str(f["queue_policy"], path(at, "queue_policy")); ok && p != FCFS {
		d.add(f["queue_policy"].val, path(at, "queue_policy"), "must be %q, got %q", FCFS, clip(p))
	}
	if q, ok := d.integer(f["quantum"], path(at, "quantum"), 1, MaxQuantum); ok {
		c.Quantum = q
	}
	if l, ok := d.integer(f["queue_limit"], path(at, "queue_limit"), 0, math.MaxInt32); ok {
		c.QueueLimit = l
	}
	return c
}

// checkName reports a class name that is not made of [a-z0-9_-] or is
// longer than maxNameLen.
func (d *decoder) checkName(n *yaml.Node, at, name string) {
	switch {
	case name == "":
		d.add(n, at, "must not be empty")
	case len(name) > maxNameLen:
		d.add(n, at, "must be at most %d characters, got %d", maxNameLen, len(name))
	case strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") != "":
		d.add(n, at, "must be made of a-z, 0-9, _ and -, got %q", clip(name))
	}
}
