package flagenv_test

import (
	"flag"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/flagenv"
)

// FuzzValues feeds one text to every value check and holds each to its
// contract: a value within bounds and no problem, or the zero value and
// exactly one problem line that names the setting and quotes the text.
func FuzzValues(f *testing.F) {
	for _, s := range []string{"", "0", "-1", " 42 ", "1e400", "NaN", "Inf", "5s", "-1s", ":8080", "[::1]:0",
		"http://h/?", "https://h:1/p#f", "9223372036854775808", "18446744073709551615", "a\nb", "\x00", "on", "OFF", "Yes", "no", "t", "y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// one checks v after a check that returned a zero value or not;
		// onlyOnFailure says that the check returns zero only on failure.
		one := func(name string, zero, onlyOnFailure bool, v *flagenv.Checker) {
			t.Helper()
			err := v.Err()
			switch {
			case err != nil && !zero:
				t.Fatalf("%s(%q) failed (%v) but returned a value", name, s, err)
			case err == nil && zero && onlyOnFailure:
				t.Fatalf("%s(%q) returned the zero value without a problem", name, s)
			case err == nil:
				return
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "VAR_E: ") || !strings.HasSuffix(msg, ", got "+strconv.Quote(s)) ||
				strings.Contains(msg, "\n") {
				t.Fatalf("%s(%q): problem %q is not one line naming VAR_E and quoting the value", name, s, msg)
			}
		}
		v := flagenv.NewChecker(sources)
		n := v.Int("e", s, -5, 5, "R")
		one("Int", n == 0, false, v)
		if n < -5 || n > 5 {
			t.Fatalf("Int(%q) = %d, out of bounds", s, n)
		}
		v = flagenv.NewChecker(sources)
		x := v.PositiveFloat("e", s, 100, "R")
		one("PositiveFloat", x == 0, true, v)
		if x != 0 && (!(x > 0) || x > 100) {
			t.Fatalf("PositiveFloat(%q) = %g, out of bounds", s, x)
		}
		v = flagenv.NewChecker(sources)
		d := v.Duration("e", s, time.Nanosecond)
		one("Duration", d == 0, true, v)
		v = flagenv.NewChecker(sources)
		one("Uint64", v.Uint64("e", s, "R") == 0, false, v)
		v = flagenv.NewChecker(sources)
		b := v.Bool("e", s)
		one("Bool", !b, false, v)
		if word := strings.ToLower(strings.TrimSpace(s)); (v.Err() == nil) != slices.Contains(
			[]string{"1", "t", "true", "on", "yes", "0", "f", "false", "off", "no"}, word) {
			t.Fatalf("Bool(%q) = %v, %v: not the words it accepts", s, b, v.Err())
		}
		v = flagenv.NewChecker(sources)
		a := v.Address("e", s)
		one("Address", a == "", true, v)
		if a != "" {
			if _, _, err := net.SplitHostPort(a); err != nil {
				t.Fatalf("Address(%q) = %q, which does not split: %v", s, a, err)
			}
		}
		v = flagenv.NewChecker(sources)
		u := v.URL("e", s)
		one("URL", u == nil, true, v)
		if u != nil && (u.Host == "" || u.RawQuery != "" || u.Fragment != "" || (u.Scheme != "http" && u.Scheme != "https")) {
			t.Fatalf("URL(%q) = %v, which breaks the rule", s, u)
		}
	})
}

// FuzzParseAliases gives a setting's three variables and its flag arbitrary
// texts, each present or not (by the bits of how), and holds Parse to the
// order flag, T_NEW, T_OLD, T_OLDER, default, where "" counts as unset; the
// source names what gave the value.
func FuzzParseAliases(f *testing.F) {
	f.Add("", "", "", "", uint8(0))
	f.Add("1", "2", "3", "4", uint8(15))
	f.Add("", "2", "3", "4", uint8(14))
	f.Add("1", "", " ", "x", uint8(7))
	f.Add("-5", "a=b", "\x00", "", uint8(9))
	f.Fuzz(func(t *testing.T, fl, canonical, old, older string, how uint8) {
		environ := map[string]string{}
		for i, kv := range [][2]string{{"T_NEW", canonical}, {"T_OLD", old}, {"T_OLDER", older}} {
			if how&(2<<i) != 0 {
				environ[kv[0]] = kv[1]
			}
		}
		var args []string
		if how&1 != 0 {
			args = []string{"--limit=" + fl}
		}
		var r aliased
		src, err := flagenv.Parse(flag.NewFlagSet("t", flag.ContinueOnError), &r, args, environ)
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		want, wantSrc := "", "default"
		switch {
		case how&1 != 0:
			want, wantSrc = fl, "flag"
		case environ["T_NEW"] != "":
			want, wantSrc = canonical, "T_NEW"
		case environ["T_OLD"] != "":
			want, wantSrc = old, "T_OLD"
		case environ["T_OLDER"] != "":
			want, wantSrc = older, "T_OLDER"
		}
		if r.Limit != want || src["limit"] != wantSrc {
			t.Fatalf("limit = %q from %q, want %q from %q", r.Limit, src["limit"], want, wantSrc)
		}
		for _, s := range flagenv.Shadowed(flagenv.MustSettings(&r), src, environ) {
			if s.Used != wantSrc || environ[s.Ignored] == "" || s.Ignored == s.Used {
				t.Fatalf("Shadowed gave %+v with the value from %q", s, wantSrc)
			}
		}
	})
}
