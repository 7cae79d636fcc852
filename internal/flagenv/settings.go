package flagenv

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/caarlos0/env/v11"
)

// Setting describes one field of a raw struct.
type Setting struct {
	// Flag is the flag's name, without dashes.
	Flag string
	// Env is the environment variable's name, the canonical one.
	Env string
	// Aliases are other variables read for the setting when Env is unset,
	// in order: the first one set gives the value. Nil for none.
	Aliases []Alias
	// Default is the text used when neither is given; "" for none.
	Default string
	// Usage is the meaning shown by --help.
	Usage string
	// Bool marks a flag that may be given without a value (--stream alone
	// means --stream=true), as the flag package's boolean flags.
	Bool bool
	// Value points at the field.
	Value *string
}

// Alias is another environment variable that gives a setting, such as the
// legacy name of a renamed variable.
type Alias struct {
	// Name is the variable's name.
	Name string
	// Note says what sets it apart, for --help ("legacy"); "" for nothing.
	Note string
}

// errNotRaw is wrapped by every error about the shape of a raw struct.
var errNotRaw = errors.New("not a raw settings struct")

// Settings lists the fields of raw, a pointer to a struct of string fields
// that each carry a flag and an env tag, and optionally an alias tag, in
// declaration order. It fails, naming the field, when the struct does not
// have that shape.
//
// An alias tag is a comma-separated list of variables, each a name
// optionally followed by a note in parentheses: alias:"OLD_NAME (legacy),
// OTHER_NAME". A variable may give only one setting, under one name.
func Settings(raw any) ([]Setting, error) {
	v := reflect.ValueOf(raw)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %T is not a pointer to a struct", errNotRaw, raw)
	}
	params, err := env.GetFieldParams(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNotRaw, err)
	}
	t := v.Elem().Type()
	if len(params) != t.NumField() {
		// GetFieldParams skips fields without an env tag, which would
		// misalign params and fields.
		return nil, fmt.Errorf("%w: %s has %d fields but %d env tags", errNotRaw, t, t.NumField(), len(params))
	}
	out := make([]Setting, t.NumField())
	owner := map[string]string{} // variable -> field
	for i := range out {
		f := t.Field(i)
		if f.Type.Kind() != reflect.String || f.Tag.Get("flag") == "" {
			return nil, fmt.Errorf("%w: field %s.%s must be a string with a flag tag", errNotRaw, t, f.Name)
		}
		aliases, err := parseAliases(f.Tag.Get("alias"))
		if err != nil {
			return nil, fmt.Errorf("%w: field %s.%s: %w", errNotRaw, t, f.Name, err)
		}
		out[i] = Setting{
			Flag:    f.Tag.Get("flag"),
			Env:     params[i].Key,
			Aliases: aliases,
			Default: params[i].DefaultValue,
			Usage:   f.Tag.Get("usage"),
			Bool:    f.Tag.Get("bool") == "true",
			Value:   v.Elem().Field(i).Addr().Interface().(*string),
		}
		for _, name := range out[i].names() {
			switch other, dup := owner[name]; {
			case dup && other == f.Name:
				return nil, fmt.Errorf("%w: field %s.%s names variable %s twice", errNotRaw, t, f.Name, name)
			case dup:
				return nil, fmt.Errorf("%w: variable %s names both %s.%s and %s.%s", errNotRaw, name, t, other, t, f.Name)
			}
			owner[name] = f.Name
		}
	}
	return out, nil
}

// parseAliases reads an alias tag; nil for an empty one.
func parseAliases(tag string) ([]Alias, error) {
	if strings.TrimSpace(tag) == "" {
		return nil, nil
	}
	var out []Alias
	for _, item := range strings.Split(tag, ",") {
		name, note, hasNote := strings.Cut(strings.TrimSpace(item), " ")
		note = strings.TrimSpace(note)
		if hasNote {
			if len(note) < 3 || note[0] != '(' || note[len(note)-1] != ')' {
				return nil, fmt.Errorf("alias %q: a note must follow the name in parentheses", item)
			}
			note = strings.TrimSpace(note[1 : len(note)-1])
		}
		if name == "" || strings.ContainsAny(name, "=()") {
			return nil, fmt.Errorf("alias %q is not a variable name", item)
		}
		out = append(out, Alias{Name: name, Note: note})
	}
	return out, nil
}

// names lists every variable of s, the canonical one first.
func (s Setting) names() []string {
	out := []string{s.Env}
	for _, a := range s.Aliases {
		out = append(out, a.Name)
	}
	return out
}

// lookup returns the variable that gives s in environ, the first of its
// names set to anything but "", and its value; "" and false when none is.
func (s Setting) lookup(environ map[string]string) (name, value string, ok bool) {
	for _, n := range s.names() {
		if v := environ[n]; v != "" {
			return n, v, true
		}
	}
	return "", "", false
}

// MustSettings is Settings for a raw struct fixed at compile time, where a
// bad tag is a programming error that every test of the command catches.
func MustSettings(raw any) []Setting {
	list, err := Settings(raw)
	if err != nil {
		panic("flagenv: " + err.Error())
	}
	return list
}

// boolFlag is a string setting that the flag package treats as a boolean:
// --stream alone means true, --stream=false false. The text is checked with
// the other settings, so a bad value is reported like any other.
type boolFlag struct{ p *string }

func (b boolFlag) String() string {
	if b.p == nil { // the flag package calls String on a zero value
		return ""
	}
	return *b.p
}
func (b boolFlag) Set(s string) error { *b.p = s; return nil }
func (b boolFlag) IsBoolFlag() bool   { return true }
