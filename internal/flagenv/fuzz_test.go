package flagenv_test

import (
	"net"
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
		"http://h/?", "https://h:1/p#f", "9223372036854775808", "18446744073709551615", "a\nb", "\x00"} {
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
