package flagenv

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/caarlos0/env/v11"
)

// Setting describes one field of a raw struct.
type Setting struct {
	// Flag is the flag's name, without dashes.
	Flag string
	// Env is the environment variable's name.
	Env string
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

// errNotRaw is wrapped by every error about the shape of a raw struct.
var errNotRaw = errors.New("not a raw settings struct")

// Settings lists the fields of raw, a pointer to a struct of string fields
// that each carry a flag and an env tag, in declaration order. It fails,
// naming the field, when the struct does not have that shape.
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
	for i := range out {
		f := t.Field(i)
		if f.Type.Kind() != reflect.String || f.Tag.Get("flag") == "" {
			return nil, fmt.Errorf("%w: field %s.%s must be a string with a flag tag", errNotRaw, t, f.Name)
		}
		out[i] = Setting{
			Flag:    f.Tag.Get("flag"),
			Env:     params[i].Key,
			Default: params[i].DefaultValue,
			Usage:   f.Tag.Get("usage"),
			Bool:    f.Tag.Get("bool") == "true",
			Value:   v.Elem().Field(i).Addr().Interface().(*string),
		}
	}
	return out, nil
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
