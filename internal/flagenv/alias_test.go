package flagenv_test

import (
	"flag"
	"reflect"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/internal/flagenv"
)

// aliased has a setting under three variables: T_NEW, then the legacy
// T_OLD, then T_OLDER; and one with a default under one.
type aliased struct {
	Limit string `flag:"limit" env:"T_NEW" alias:"T_OLD (legacy), T_OLDER" usage:"the limit"`
	On    string `flag:"on" env:"T_ON" envDefault:"true" bool:"true" usage:"a switch"`
}

func TestParseAliases(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		environ map[string]string
		want    string // Limit
		source  string // of limit
	}{
		{name: "none", want: "", source: "default"},
		{name: "last alias", environ: map[string]string{"T_OLDER": "3"}, want: "3", source: "T_OLDER"},
		{name: "first alias over second", environ: map[string]string{"T_OLD": "2", "T_OLDER": "3"}, want: "2", source: "T_OLD"},
		{name: "canonical over aliases", environ: map[string]string{"T_NEW": "1", "T_OLD": "2", "T_OLDER": "3"}, want: "1", source: "T_NEW"},
		{name: "empty canonical is unset", environ: map[string]string{"T_NEW": "", "T_OLD": "2"}, want: "2", source: "T_OLD"},
		{name: "empty aliases are unset", environ: map[string]string{"T_NEW": "", "T_OLD": "", "T_OLDER": "3"}, want: "3", source: "T_OLDER"},
		{name: "every name empty", environ: map[string]string{"T_NEW": "", "T_OLD": "", "T_OLDER": ""}, want: "", source: "default"},
		{name: "blank is set", environ: map[string]string{"T_NEW": " ", "T_OLD": "2"}, want: " ", source: "T_NEW"},
		{name: "flag over every name", args: []string{"--limit=9"},
			environ: map[string]string{"T_NEW": "1", "T_OLD": "2", "T_OLDER": "3"}, want: "9", source: "flag"},
		{name: "empty flag over an alias", args: []string{"--limit="}, environ: map[string]string{"T_OLD": "2"}, want: "", source: "flag"},
		{name: "unrelated names", environ: map[string]string{"T_OLDEST": "4", "t_old": "5"}, want: "", source: "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r aliased
			src, err := flagenv.Parse(flag.NewFlagSet("t", flag.ContinueOnError), &r, tt.args, tt.environ)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if r.Limit != tt.want || src["limit"] != tt.source {
				t.Errorf("limit = %q from %q, want %q from %q", r.Limit, src["limit"], tt.want, tt.source)
			}
			if r.On != "true" || src["on"] != "default" {
				t.Errorf("on = %q from %q, want its default", r.On, src["on"])
			}
			// A problem names the variable that gave the value.
			if wantName := map[string]string{"default": "--limit (default)", "flag": "--limit"}[tt.source]; wantName != "" {
				if got := flagenv.NewChecker(src).Name("limit"); got != wantName {
					t.Errorf("Name = %q, want %q", got, wantName)
				}
			} else if got := flagenv.NewChecker(src).Name("limit"); got != tt.source {
				t.Errorf("Name = %q, want %q", got, tt.source)
			}
		})
	}
}

func TestSettingsAliases(t *testing.T) {
	var r aliased
	list, err := flagenv.Settings(&r)
	if err != nil {
		t.Fatal(err)
	}
	want := []flagenv.Alias{{Name: "T_OLD", Note: "legacy"}, {Name: "T_OLDER"}}
	if !reflect.DeepEqual(list[0].Aliases, want) || list[1].Aliases != nil {
		t.Errorf("Aliases = %+v, %+v; want %+v, nil", list[0].Aliases, list[1].Aliases, want)
	}
}

func TestSettingsBadAliases(t *testing.T) {
	tests := []struct {
		name    string
		raw     any
		wantSub string
	}{
		{"note without parentheses", &struct {
			A string `flag:"a" env:"A" alias:"B legacy"`
		}{}, `alias "B legacy": a note must follow the name in parentheses`},
		{"unclosed note", &struct {
			A string `flag:"a" env:"A" alias:"B (legacy"`
		}{}, "in parentheses"},
		{"empty name", &struct {
			A string `flag:"a" env:"A" alias:"B,,C"`
		}{}, `alias "" is not a variable name`},
		{"note alone", &struct {
			A string `flag:"a" env:"A" alias:"(legacy)"`
		}{}, "is not a variable name"},
		{"alias is the canonical name", &struct {
			A string `flag:"a" env:"A" alias:"A"`
		}{}, "names variable A twice"},
		{"alias twice", &struct {
			A string `flag:"a" env:"A" alias:"B, B (legacy)"`
		}{}, "names variable B twice"},
		{"alias of another setting", &struct {
			A string `flag:"a" env:"A"`
			B string `flag:"b" env:"B" alias:"A"`
		}{}, "variable A names both"},
		{"one variable for two settings", &struct {
			A string `flag:"a" env:"X"`
			B string `flag:"b" env:"X"`
		}{}, "variable X names both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := flagenv.Settings(tt.raw)
			if err == nil || !strings.Contains(err.Error(), tt.wantSub) {
				t.Fatalf("Settings: %v, want an error containing %q", err, tt.wantSub)
			}
			if _, err := flagenv.Parse(flag.NewFlagSet("t", flag.ContinueOnError), tt.raw, nil, nil); err == nil {
				t.Error("Parse accepted the struct")
			}
		})
	}
}

func TestShadowed(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		environ map[string]string
		want    []flagenv.Shadow
	}{
		{name: "nothing set"},
		{name: "canonical alone", environ: map[string]string{"T_NEW": "1"}},
		{name: "alias alone", environ: map[string]string{"T_OLD": "1"}},
		{name: "same value", environ: map[string]string{"T_NEW": "1", "T_OLD": " 1 "}},
		{name: "empty alias", environ: map[string]string{"T_NEW": "1", "T_OLD": ""}},
		{name: "canonical over alias", environ: map[string]string{"T_NEW": "1", "T_OLD": "2"},
			want: []flagenv.Shadow{{Flag: "limit", Used: "T_NEW", UsedValue: "1", Ignored: "T_OLD", IgnoredValue: "2"}}},
		{name: "canonical over both aliases", environ: map[string]string{"T_NEW": "1", "T_OLD": "2", "T_OLDER": "3"},
			want: []flagenv.Shadow{
				{Flag: "limit", Used: "T_NEW", UsedValue: "1", Ignored: "T_OLD", IgnoredValue: "2"},
				{Flag: "limit", Used: "T_NEW", UsedValue: "1", Ignored: "T_OLDER", IgnoredValue: "3"},
			}},
		{name: "alias over alias", environ: map[string]string{"T_NEW": "", "T_OLD": "2", "T_OLDER": "3"},
			want: []flagenv.Shadow{{Flag: "limit", Used: "T_OLD", UsedValue: "2", Ignored: "T_OLDER", IgnoredValue: "3"}}},
		{name: "a flag shadows nothing", args: []string{"--limit=9"}, environ: map[string]string{"T_NEW": "1", "T_OLD": "2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r aliased
			src, err := flagenv.Parse(flag.NewFlagSet("t", flag.ContinueOnError), &r, tt.args, tt.environ)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := flagenv.Shadowed(flagenv.MustSettings(&r), src, tt.environ); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Shadowed = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestWriteUsageAliases(t *testing.T) {
	var r aliased
	var b strings.Builder
	if err := flagenv.WriteUsage(&b, "Usage: t\n\n", flagenv.MustSettings(&r), flagenv.VersionRow()); err != nil {
		t.Fatal(err)
	}
	want := "Usage: t\n\n" +
		"FLAG       ENVIRONMENT  DEFAULT  MEANING\n" +
		"--limit    T_NEW        (unset)  the limit\n" +
		"           or T_OLD (legacy)\n" +
		"           or T_OLDER\n" +
		"--on       T_ON         true     a switch\n" +
		"--version                        print the version and exit\n"
	if got := b.String(); got != want {
		t.Errorf("WriteUsage wrote\n%s\nwant\n%s", got, want)
	}
}
