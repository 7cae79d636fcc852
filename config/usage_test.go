package config_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/config"
)

// usageRows returns Usage's table rows, keyed by flag name (without
// dashes), each split into its whitespace-separated fields.
func usageRows(t *testing.T) (string, map[string][]string) {
	t.Helper()
	var b bytes.Buffer
	config.Usage(&b)
	out := b.String()
	rows := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "--") {
			continue
		}
		name := strings.TrimPrefix(f[0], "--")
		if _, dup := rows[name]; dup {
			t.Errorf("Usage lists --%s twice", name)
		}
		rows[name] = f
	}
	return out, rows
}

func TestUsage(t *testing.T) {
	out, rows := usageRows(t)
	for _, s := range allSettings {
		t.Run(s.flag, func(t *testing.T) {
			f, ok := rows[s.flag]
			if !ok {
				t.Fatalf("Usage does not list --%s:\n%s", s.flag, out)
			}
			if len(f) < 4 {
				t.Fatalf("Usage row for --%s has no meaning: %q", s.flag, f)
			}
			if f[1] != s.env {
				t.Errorf("--%s: environment column = %q, want %q", s.flag, f[1], s.env)
			}
			if f[2] != s.usageDefault {
				t.Errorf("--%s: default column = %q, want %q", s.flag, f[2], s.usageDefault)
			}
		})
	}
	t.Run("version", func(t *testing.T) {
		if _, ok := rows["version"]; !ok {
			t.Errorf("Usage does not list --version:\n%s", out)
		}
	})
	t.Run("no extra rows", func(t *testing.T) {
		// Every row Usage shows is a flag Load accepts, and a setting the
		// tests know about.
		known := map[string]bool{"version": true}
		for _, s := range allSettings {
			known[s.flag] = true
		}
		for name := range rows {
			if !known[name] {
				t.Errorf("Usage lists --%s, unknown to allSettings", name)
			}
		}
	})
	t.Run("mentions precedence", func(t *testing.T) {
		if !strings.HasPrefix(out, "Usage: slotgate") || !strings.Contains(out, "the flag wins") {
			t.Errorf("Usage header changed:\n%s", out)
		}
	})
}

// TestUsageMatchesLoad checks that each flag and variable listed by Usage is
// the one Load reads: the default in the table is what Load uses, and
// setting the listed variable or flag to it is credited to that source.
func TestUsageMatchesLoad(t *testing.T) {
	_, rows := usageRows(t)
	for name, f := range rows {
		if name == "version" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			variable, def := f[1], f[2]
			env := map[string]string{}
			if name == "request-queue-limit" {
				env["DYN_ENGINE_REQUEST_LIMIT"] = "4"
			}
			if def == "(unset)" {
				def = "0.5" // valid for every setting without a default
				if name == "engine-request-limit" || name == "active-prefill-tokens-threshold" {
					def = "4"
				}
			}
			env[variable] = def
			c := mustLoad(t, nil, env)
			if got := c.Sources[name]; got != variable {
				t.Errorf("with %s set, Sources[%q] = %q", variable, name, got)
			}
			c = mustLoad(t, []string{"--" + name + "=" + def}, map[string]string{})
			if got := c.Sources[name]; got != "flag" {
				t.Errorf("with --%s set, Sources[%q] = %q", name, name, got)
			}
		})
	}
}
