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
	t.Run("mentions N, W and Q", func(t *testing.T) {
		for _, word := range []string{" N ", " W ", " Q,", "pass-through"} {
			if !strings.Contains(out, word) {
				t.Errorf("Usage intro does not mention %q:\n%s", word, out)
			}
		}
	})
}

// TestUsageListsEveryName checks that --help lists every variable of a
// setting: its own on the row, then each other name, in the order they are
// read, on the lines right below it.
func TestUsageListsEveryName(t *testing.T) {
	var b bytes.Buffer
	config.Usage(&b)
	lines := strings.Split(b.String(), "\n")
	for _, s := range allSettings {
		t.Run(s.flag, func(t *testing.T) {
			row := -1
			for i, l := range lines {
				if f := strings.Fields(l); len(f) > 1 && f[0] == "--"+s.flag {
					row = i
				}
			}
			if row < 0 || strings.Fields(lines[row])[1] != s.env {
				t.Fatalf("no row for --%s naming %s:\n%s", s.flag, s.env, b.String())
			}
			want := otherNames[s.flag]
			for i, name := range want {
				l := lines[row+1+i]
				if f := strings.Fields(l); len(f) < 2 || f[0] != "or" || f[1] != name {
					t.Errorf("line %d after --%s = %q, want \"or %s ...\"", i+1, s.flag, l, name)
				}
				// Under the variable's column.
				if got, want := strings.Index(l, "or "), strings.Index(lines[row], s.env); got != want {
					t.Errorf("%q is indented %d, the variable %d", l, got, want)
				}
			}
			if next := strings.TrimSpace(lines[row+1+len(want)]); strings.HasPrefix(next, "or ") {
				t.Errorf("--%s lists another name, %q; add it to otherNames", s.flag, next)
			}
		})
	}
	for _, legacy := range []string{"or DYN_ENGINE_REQUEST_LIMIT (legacy)", "or DYN_DYNAMO_REQUEST_QUEUE_LIMIT (legacy"} {
		if !strings.Contains(b.String(), legacy) {
			t.Errorf("Usage does not say %q", legacy)
		}
	}
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
			base := func() map[string]string {
				if name == "request-queue-limit" { // a queue needs an engine limit
					return map[string]string{"DYN_ENGINE_REQUEST_LIMIT": "4"}
				}
				return map[string]string{}
			}
			if def == "(unset)" {
				def = "0.5" // valid for every setting without a default
				switch name {
				case "engine-request-limit", "engine-request-waiting-limit", "active-prefill-tokens-threshold":
					def = "4"
				case "engine-grpc-url":
					def = "http://127.0.0.1:50051"
				case "grpc-listen":
					def = "127.0.0.1:9092"
				case "dynamo-event-plane":
					def = "off"
				case "dyn-event-plane":
					def = "zmq"
				}
			}
			env := base()
			env[variable] = def
			c := mustLoad(t, nil, env)
			if got := c.Sources[name]; got != variable {
				t.Errorf("with %s set, Sources[%q] = %q", variable, name, got)
			}
			c = mustLoad(t, []string{"--" + name + "=" + def}, base())
			if got := c.Sources[name]; got != "flag" {
				t.Errorf("with --%s set, Sources[%q] = %q", name, name, got)
			}
			// Each other name of the setting gives it too, and is
			// credited; only the timeout's counts milliseconds.
			for _, other := range otherNames[name] {
				value := def
				if name == "queue-timeout" {
					value = "0"
				}
				env := base()
				env[other] = value
				if c := mustLoad(t, nil, env); c.Sources[name] != other {
					t.Errorf("with %s set, Sources[%q] = %q", other, name, c.Sources[name])
				}
			}
		})
	}
}
