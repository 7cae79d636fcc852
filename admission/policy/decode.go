package policy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// maxProblems is the most problems reported: a file that repeats a
// large mistake (through aliases, say) must not make the report, or the
// walk, grow without bound.
const maxProblems = 100

// decoder walks the file's node tree, collecting every problem it finds.
type decoder struct {
	file     string
	problems []error
	stopped  bool // the walk stopped, or problems were dropped, after maxProblems
}

func (d *decoder) err() error {
	if d.stopped {
		return errors.Join(append(d.problems, &problem{file: d.file,
			msg: fmt.Sprintf("stopped after %d problems", maxProblems)})...)
	}
	return errors.Join(d.problems...)
}

func (d *decoder) ok() bool { return len(d.problems) == 0 }

// full reports whether no more problems are kept.
func (d *decoder) full() bool { return len(d.problems) >= maxProblems }

// stop reports whether the walk should stop before its next step, as no
// more problems are kept.
func (d *decoder) stop() bool {
	d.stopped = d.stopped || d.full()
	return d.stopped
}

// report records p, unless maxProblems are recorded already.
func (d *decoder) report(p ...error) {
	for _, e := range p {
		if d.full() {
			d.stopped = true
			return
		}
		d.problems = append(d.problems, e)
	}
}

// add records a problem at n's line (0 when n is nil).
func (d *decoder) add(n *yaml.Node, field, format string, args ...any) {
	d.report(&problem{file: d.file, line: line(n), field: field, msg: fmt.Sprintf(format, args...)})
}

// wrap records err at n's line, after msg when msg is not empty.
func (d *decoder) wrap(n *yaml.Node, field, msg string, err error) {
	d.report(&problem{file: d.file, line: line(n), field: field, msg: msg, err: err})
}

func line(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

// field is one key of a mapping and its value; both nil when the key is
// absent.
type field struct {
	key, val *yaml.Node
}

// set reports whether the field is present with a non-null value.
func (f field) set() bool { return f.val != nil && !isNull(resolve(f.val)) }

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// kind names a node's kind for messages.
func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "null"
		}
		return fmt.Sprintf("%s %q", strings.TrimPrefix(n.ShortTag(), "!!"), clip(n.Value))
	}
	return "an alias"
}

// maxQuoted is the most bytes of a value or key quoted in a message.
const maxQuoted = 64

// clip shortens s to about maxQuoted bytes, at a character boundary, for
// a message.
func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	i := maxQuoted
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// path joins a field path and a key.
func path(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// fields returns the keys of the mapping n by name. A key not in known, a
// key given twice or a key that is not a plain scalar is reported; so is
// n when it is not a mapping, and then no fields are returned.
func (d *decoder) fields(n *yaml.Node, at string, known ...string) map[string]field {
	out := make(map[string]field, len(known))
	m := resolve(n)
	if m.Kind != yaml.MappingNode {
		if at == "" {
			d.add(n, "", "the top level must be a mapping, got %s", kind(m))
		} else {
			d.add(n, at, "must be a mapping, got %s", kind(m))
		}
		return out
	}
	for i := 0; i+1 < len(m.Content) && !d.stop(); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.add(k, at, "keys must be names, got %s", kind(k))
			continue
		}
		name := k.Value
		switch prev, dup := out[name]; {
		case dup:
			d.add(k, path(at, name), "repeated (first at line %d)", prev.key.Line)
		case !contains(known, name):
			d.add(k, path(at, clip(name)), "unknown field (known: %s)", strings.Join(known, ", "))
		default:
			out[name] = field{key: k, val: v}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// str returns a set scalar field's text; ok is false when the field is
// absent, null, or not a scalar (which is reported).
func (d *decoder) str(f field, at string) (s string, ok bool) {
	if !f.set() {
		return "", false
	}
	n := resolve(f.val)
	if n.Kind != yaml.ScalarNode {
		d.add(f.val, at, "must be a string, got %s", kind(n))
		return "", false
	}
	return n.Value, true
}

// integer returns a set integer field's value, reporting a value that is
// not an integer from lo to hi; ok is false when the field is absent,
// null or wrong.
func (d *decoder) integer(f field, at string, lo, hi int64) (v int, ok bool) {
	if !f.set() {
		return 0, false
	}
	n := resolve(f.val)
	var i int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil {
		d.add(f.val, at, "must be an integer from %d to %d, got %s", lo, hi, kind(n))
		return 0, false
	}
	if i < lo || i > hi {
		d.add(f.val, at, "must be from %d to %d, got %d", lo, hi, i)
		return 0, false
	}
	return int(i), true
}

// list returns the items of a set list field; a value that is not a list
// is reported.
func (d *decoder) list(f field, at string) []*yaml.Node {
	if !f.set() {
		return nil
	}
	n := resolve(f.val)
	if n.Kind != yaml.SequenceNode {
		d.add(f.val, at, "must be a list, got %s", kind(n))
		return nil
	}
	return n.Content
}

// index returns a list item's field path, e.g. policy_classes[1].
func index(at string, i int) string { return at + "[" + strconv.Itoa(i) + "]" }
