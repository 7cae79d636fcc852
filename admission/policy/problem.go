package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// problem is one thing wrong with the file.
type problem struct {
	file  string
	line  int    // 0: not known
	field string // e.g. "policy_classes[1].quantum"; empty: the whole file
	msg   string
	err   error // a provider's or factory's error, kept for errors.Is
}

func (p *problem) Error() string {
	var b bytes.Buffer
	b.WriteString(p.file)
	if p.line > 0 {
		fmt.Fprintf(&b, ":%d", p.line)
	}
	b.WriteString(": ")
	if p.field != "" {
		b.WriteString(p.field)
		b.WriteString(": ")
	}
	b.WriteString(p.msg)
	if p.err != nil {
		if p.msg != "" {
			b.WriteString(": ")
		}
		b.WriteString(p.err.Error())
	}
	return b.String()
}

func (p *problem) Unwrap() error { return p.err }

// yamlLine matches a YAML library message that starts with a line number.
var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// yamlProblem turns one message of the YAML library into a problem,
// taking its line number out of the text; at is the line when the
// message has none.
func yamlProblem(file string, at int, field, msg string) *problem {
	msg = strings.TrimPrefix(msg, "yaml: ")
	p := &problem{file: file, line: at, field: field, msg: msg}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			p.line, p.msg = n, m[2]
		}
	}
	return p
}

// yamlErrors turns an error of the YAML library into problems, one for
// each message it holds; at is the line of those without one.
func yamlErrors(file string, at int, field string, err error) []error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return []error{yamlProblem(file, at, field, err.Error())}
	}
	out := make([]error, len(te.Errors))
	for i, m := range te.Errors {
		out[i] = yamlProblem(file, at, field, m)
	}
	return out
}

// document returns the root node of the file's only YAML document, or nil
// for a file without one (empty, or comments only).
func document(file string, data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	// KnownFields has no effect on a Node target: decoder.fields checks
	// the keys itself, to name each unknown field with its path and line.
	// It is set so that a later change to a struct target stays strict.
	dec.KnownFields(true)
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case err == io.EOF:
		return nil, nil
	case err != nil:
		return nil, errors.Join(yamlErrors(file, 0, "invalid YAML", err)...)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == io.EOF:
	case err != nil:
		return nil, errors.Join(yamlErrors(file, 0, "invalid YAML", err)...)
	default:
		return nil, &problem{file: file, line: next.Line, msg: "a second YAML document; the file must hold one"}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}
