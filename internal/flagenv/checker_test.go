package flagenv_test

import (
	"math"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/flagenv"
)

// sources credits "f" to the flag, "e" to VAR_E and "d" to its default.
var sources = map[string]string{"f": "flag", "e": "VAR_E", "d": "default"}

func TestName(t *testing.T) {
	v := flagenv.NewChecker(sources)
	for flagName, want := range map[string]string{"f": "--f", "e": "VAR_E", "d": "--d (default)", "unknown": "--unknown (default)"} {
		if got := v.Name(flagName); got != want {
			t.Errorf("Name(%q) = %q, want %q", flagName, got, want)
		}
	}
	for flagName, want := range map[string]bool{"f": true, "e": true, "d": false, "unknown": false} {
		if got := v.Explicit(flagName); got != want {
			t.Errorf("Explicit(%q) = %v, want %v", flagName, got, want)
		}
	}
}

func TestCheckerCollects(t *testing.T) {
	v := flagenv.NewChecker(sources)
	if v.Err() != nil || v.Warnings() != nil {
		t.Fatalf("a fresh Checker has %v, %v", v.Err(), v.Warnings())
	}
	v.Fail("f", "x", "must be y")
	v.Fail("e", "", "must not be empty")
	v.Warn("careful")
	want := "--f: must be y, got \"x\"\nVAR_E: must not be empty, got \"\""
	if err := v.Err(); err == nil || err.Error() != want {
		t.Errorf("Err = %v, want %q", err, want)
	}
	if w := v.Warnings(); len(w) != 1 || w[0] != "careful" {
		t.Errorf("Warnings = %q", w)
	}
}

// check runs one check on a fresh Checker and returns its value and its
// problem ("" for none).
func check[T any](f func(*flagenv.Checker) T) (T, string) {
	v := flagenv.NewChecker(sources)
	got := f(v)
	if err := v.Err(); err != nil {
		return got, err.Error()
	}
	return got, ""
}

func TestInt(t *testing.T) {
	tests := []struct {
		name, s string
		lo, hi  int
		want    int
		problem string
	}{
		{"in range", "5", 1, 10, 5, ""},
		{"spaces", " 7 ", 1, 10, 7, ""},
		{"low bound", "1", 1, 10, 1, ""},
		{"high bound", "10", 1, 10, 10, ""},
		{"below", "0", 1, 10, 0, `--f: RULE, got "0"`},
		{"above", "11", 1, 10, 0, `--f: RULE, got "11"`},
		{"not a number", "x", 1, 10, 0, `--f: RULE, got "x"`},
		{"empty", "", 0, 10, 0, `--f: RULE, got ""`},
		{"overflow", "99999999999999999999", 0, math.MaxInt, 0, `--f: RULE, got "99999999999999999999"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problem := check(func(v *flagenv.Checker) int { return v.Int("f", tt.s, tt.lo, tt.hi, "RULE") })
			if got != tt.want || problem != tt.problem {
				t.Errorf("Int(%q) = %d, %q; want %d, %q", tt.s, got, problem, tt.want, tt.problem)
			}
			got64, problem := check(func(v *flagenv.Checker) int64 {
				return v.Int64("f", tt.s, int64(tt.lo), int64(tt.hi), "RULE")
			})
			if got64 != int64(tt.want) || problem != tt.problem {
				t.Errorf("Int64(%q) = %d, %q; want %d, %q", tt.s, got64, problem, tt.want, tt.problem)
			}
		})
	}
}

func TestUint64(t *testing.T) {
	tests := []struct {
		s       string
		want    uint64
		problem string
	}{
		{"0", 0, ""},
		{" 18446744073709551615", math.MaxUint64, ""},
		{"18446744073709551616", 0, `VAR_E: RULE, got "18446744073709551616"`},
		{"-1", 0, `VAR_E: RULE, got "-1"`},
	}
	for _, tt := range tests {
		got, problem := check(func(v *flagenv.Checker) uint64 { return v.Uint64("e", tt.s, "RULE") })
		if got != tt.want || problem != tt.problem {
			t.Errorf("Uint64(%q) = %d, %q; want %d, %q", tt.s, got, problem, tt.want, tt.problem)
		}
	}
}

func TestPositiveFloat(t *testing.T) {
	tests := []struct {
		s    string
		hi   float64
		want float64
		ok   bool
	}{
		{"1", 10, 1, true},
		{" 0.5 ", 10, 0.5, true},
		{"10", 10, 10, true},
		{"10.5", 10, 0, false},
		{"0", 10, 0, false},
		{"-1", 10, 0, false},
		{"NaN", math.MaxFloat64, 0, false},
		{"Inf", math.MaxFloat64, 0, false},
		{"1e400", math.MaxFloat64, 0, false},
		{"x", 10, 0, false},
	}
	for _, tt := range tests {
		got, problem := check(func(v *flagenv.Checker) float64 { return v.PositiveFloat("d", tt.s, tt.hi, "RULE") })
		if got != tt.want || (problem == "") != tt.ok {
			t.Errorf("PositiveFloat(%q, %g) = %g, %q; want %g, ok %v", tt.s, tt.hi, got, problem, tt.want, tt.ok)
		}
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		name, s, examples string
		min               time.Duration
		want              time.Duration
		problem           string
	}{
		{"zero allowed", "0", "", 0, 0, ""},
		{"spaces", " 5s ", "", 0, 5 * time.Second, ""},
		{"negative", "-1s", "", 0, 0, `--f: must not be negative, got "-1s"`},
		{"zero refused", "0s", "", time.Nanosecond, 0, `--f: must be positive, got "0s"`},
		{"default examples", "x", "", 0, 0, `--f: must be a duration such as 500ms, 5s or 2m, got "x"`},
		{"own examples", "x", "1h or 2h", 0, 0, `--f: must be a duration such as 1h or 2h, got "x"`},
		{"empty", "", "", 0, 0, `--f: must be a duration such as 500ms, 5s or 2m, got ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problem := check(func(v *flagenv.Checker) time.Duration {
				v.DurationExamples = tt.examples
				return v.Duration("f", tt.s, tt.min)
			})
			if got != tt.want || problem != tt.problem {
				t.Errorf("Duration(%q) = %v, %q; want %v, %q", tt.s, got, problem, tt.want, tt.problem)
			}
		})
	}
}

func TestAddress(t *testing.T) {
	tests := []struct{ s, want, problem string }{
		{":8080", ":8080", ""},
		{"127.0.0.1:0", "127.0.0.1:0", ""},
		{"[::1]:65535", "[::1]:65535", ""},
		{"host", "", `--f: must be host:port or :port, got "host"`},
		{":65536", "", `--f: must have a port from 0 through 65535, got ":65536"`},
		{":http", "", `--f: must have a port from 0 through 65535, got ":http"`},
	}
	for _, tt := range tests {
		got, problem := check(func(v *flagenv.Checker) string { return v.Address("f", tt.s) })
		if got != tt.want || problem != tt.problem {
			t.Errorf("Address(%q) = %q, %q; want %q, %q", tt.s, got, problem, tt.want, tt.problem)
		}
	}
}

func TestURL(t *testing.T) {
	const scheme, query = "must be an http:// or https:// URL with a host", "must not have a query or fragment"
	tests := []struct{ s, want, rule string }{
		{"http://h:1", "http://h:1", ""},
		{" https://h/p ", "https://h/p", ""},
		{"http://h/?", "http://h/?", ""}, // ForceQuery is left to the caller
		{"ftp://h", "", scheme},
		{"http://", "", scheme},
		{"h:1", "", scheme},
		{"http://h/?a=1", "", query},
		{"http://h/#x", "", query},
	}
	for _, tt := range tests {
		got, problem := check(func(v *flagenv.Checker) string {
			if u := v.URL("f", tt.s); u != nil {
				return u.String()
			}
			return ""
		})
		wantProblem := ""
		if tt.rule != "" {
			wantProblem = "--f: " + tt.rule + `, got "` + tt.s + `"`
		}
		if got != tt.want || problem != wantProblem {
			t.Errorf("URL(%q) = %q, %q; want %q, %q", tt.s, got, problem, tt.want, wantProblem)
		}
	}
}

func TestOneOfAndNonEmpty(t *testing.T) {
	tests := []struct {
		name, want, problem string
		f                   func(*flagenv.Checker) string
	}{
		{"one of", "b", "", func(v *flagenv.Checker) string { return v.OneOf("f", "b", "a", "b") }},
		{"not one of", "", `--f: must be one of a, b, got "B"`, func(v *flagenv.Checker) string { return v.OneOf("f", "B", "a", "b") }},
		{"non-empty", "x", "", func(v *flagenv.Checker) string { return v.NonEmpty("f", "x") }},
		{"blank kept", " ", `--f: must not be empty, got " "`, func(v *flagenv.Checker) string { return v.NonEmpty("f", " ") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problem := check(tt.f)
			if got != tt.want || problem != tt.problem {
				t.Errorf("got %q, %q; want %q, %q", got, problem, tt.want, tt.problem)
			}
		})
	}
}

func TestBool(t *testing.T) {
	const rule = "must be true or false (or 1 or 0, on or off, yes or no)"
	tests := []struct {
		s    string
		want bool
		ok   bool
	}{
		{"1", true, true},
		{"true", true, true},
		{"TRUE", true, true},
		{"True", true, true},
		{"tRuE", true, true},
		{"on", true, true},
		{"ON", true, true},
		{"yes", true, true},
		{"Yes", true, true},
		{"t", true, true},
		{"T", true, true},
		{" yes\t", true, true},
		{"0", false, true},
		{"false", false, true},
		{"FALSE", false, true},
		{"off", false, true},
		{"Off", false, true},
		{"no", false, true},
		{"NO", false, true},
		{"f", false, true},
		{" 0 ", false, true},
		{"", false, false},
		{" ", false, false},
		{"2", false, false},
		{"-1", false, false},
		{"y", false, false},
		{"n", false, false},
		{"enabled", false, false},
		{"maybe", false, false},
		{"yes please", false, false},
		{"o n", false, false},
	}
	for _, tt := range tests {
		got, problem := check(func(v *flagenv.Checker) bool { return v.Bool("e", tt.s) })
		wantProblem := ""
		if !tt.ok {
			wantProblem = "VAR_E: " + rule + `, got "` + tt.s + `"`
		}
		if got != tt.want || problem != wantProblem {
			t.Errorf("Bool(%q) = %v, %q; want %v, %q", tt.s, got, problem, tt.want, wantProblem)
		}
	}
}
