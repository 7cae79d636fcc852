package flagenv_test

import (
	"errors"
	"flag"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/internal/flagenv"
)

// raw is a settings struct of the shape the commands use.
type raw struct {
	Listen string `flag:"listen" env:"T_LISTEN" envDefault:":8080" usage:"address"`
	Limit  string `flag:"limit" env:"T_LIMIT" usage:"no default"`
	Stream string `flag:"stream" env:"T_STREAM" envDefault:"true" bool:"true" usage:"a switch"`
}

func TestParsePrecedence(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		environ     map[string]string
		want        raw
		wantSources map[string]string
	}{
		{
			name: "defaults", want: raw{Listen: ":8080", Stream: "true"},
			wantSources: map[string]string{"listen": "default", "limit": "default", "stream": "default"},
		},
		{
			name: "environment over default", environ: map[string]string{"T_LISTEN": ":1", "T_LIMIT": "4"},
			want:        raw{Listen: ":1", Limit: "4", Stream: "true"},
			wantSources: map[string]string{"listen": "T_LISTEN", "limit": "T_LIMIT", "stream": "default"},
		},
		{
			name: "flag over environment", args: []string{"--listen=:2", "--stream=false"},
			environ:     map[string]string{"T_LISTEN": ":1", "T_STREAM": "true"},
			want:        raw{Listen: ":2", Stream: "false"},
			wantSources: map[string]string{"listen": "flag", "limit": "default", "stream": "flag"},
		},
		{
			name: "empty variable counts as unset", environ: map[string]string{"T_LISTEN": ""},
			want:        raw{Listen: ":8080", Stream: "true"},
			wantSources: map[string]string{"listen": "default", "limit": "default", "stream": "default"},
		},
		{
			name: "bool flag alone means true", args: []string{"--stream"}, environ: map[string]string{"T_STREAM": "no"},
			want:        raw{Listen: ":8080", Stream: "true"},
			wantSources: map[string]string{"listen": "default", "limit": "default", "stream": "flag"},
		},
		{
			name: "bool flag keeps bad text for the checker", args: []string{"--stream=maybe"},
			want:        raw{Listen: ":8080", Stream: "maybe"},
			wantSources: map[string]string{"listen": "default", "limit": "default", "stream": "flag"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r raw
			got, err := flagenv.Parse(flag.NewFlagSet("t", flag.ContinueOnError), &r, tt.args, tt.environ)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if r != tt.want {
				t.Errorf("values = %+v, want %+v", r, tt.want)
			}
			if !maps.Equal(got, tt.wantSources) {
				t.Errorf("sources = %v, want %v", got, tt.wantSources)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name    string
		raw     any
		args    []string
		wantIs  error
		wantSub string
	}{
		{name: "help", raw: &raw{}, args: []string{"-h"}, wantIs: flag.ErrHelp},
		{name: "long help", raw: &raw{}, args: []string{"--help"}, wantIs: flag.ErrHelp},
		{name: "unknown flag", raw: &raw{}, args: []string{"--nope"}, wantSub: "command line: flag provided but not defined: -nope"},
		{name: "stray argument", raw: &raw{}, args: []string{"serve"}, wantSub: `command line: unexpected argument "serve"`},
		{name: "not a pointer", raw: raw{}, wantSub: "is not a pointer to a struct"},
		{name: "field without env tag", raw: &struct {
			A string `flag:"a"`
		}{}, wantSub: "1 fields but 0 env tags"},
		{name: "field that is not a string", raw: &struct {
			A int `flag:"a" env:"A"`
		}{}, wantSub: "must be a string with a flag tag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := flagenv.Parse(flag.NewFlagSet("t", flag.ContinueOnError), tt.raw, tt.args, nil)
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			if tt.wantIs != nil && err != tt.wantIs {
				t.Errorf("err = %v, want %v unwrapped", err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), tt.wantSub) {
				t.Errorf("err = %q, want it to contain %q", err, tt.wantSub)
			}
		})
	}
}

// TestParseLeavesCallerFlags: flags registered before Parse, such as
// --version, still work and have no source.
func TestParseLeavesCallerFlags(t *testing.T) {
	var r raw
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	version := fs.Bool("version", false, "")
	src, err := flagenv.Parse(fs, &r, []string{"--version"}, nil)
	if err != nil || !*version {
		t.Fatalf("Parse: %v, version = %v", err, *version)
	}
	if _, ok := src["version"]; ok {
		t.Errorf("sources = %v, want no entry for version", src)
	}
}

func TestMustSettingsPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustSettings of a non-struct did not panic")
		}
	}()
	flagenv.MustSettings(new(string))
}

func TestSettings(t *testing.T) {
	var r raw
	list, err := flagenv.Settings(&r)
	if err != nil {
		t.Fatal(err)
	}
	want := []flagenv.Setting{
		{Flag: "listen", Env: "T_LISTEN", Default: ":8080", Usage: "address", Value: &r.Listen},
		{Flag: "limit", Env: "T_LIMIT", Usage: "no default", Value: &r.Limit},
		{Flag: "stream", Env: "T_STREAM", Default: "true", Usage: "a switch", Bool: true, Value: &r.Stream},
	}
	if len(list) != len(want) {
		t.Fatalf("got %d settings, want %d", len(list), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(list[i], want[i]) {
			t.Errorf("setting %d = %+v, want %+v", i, list[i], want[i])
		}
	}
}

func TestEnviron(t *testing.T) {
	got := flagenv.Environ([]string{"A=1", "B=", "C=x=y", "junk"})
	want := map[string]string{"A": "1", "B": "", "C": "x=y"}
	if !maps.Equal(got, want) {
		t.Errorf("Environ = %v, want %v", got, want)
	}
}

func TestReport(t *testing.T) {
	var b strings.Builder
	flagenv.Report(&b, "prog", errors.Join(errors.New("one"), errors.New("two")))
	if got, want := b.String(), "prog: one\nprog: two\n"; got != want {
		t.Errorf("Report wrote %q, want %q", got, want)
	}
}
