package logline_test

import (
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap/buffer"

	"github.com/slotgate/slotgate/internal/logline"
)

// FuzzAppendSeconds: a duration within the bound is written as zap's
// SecondsDurationEncoder has its JSON encoder write it (strconv's shortest
// 'f' form of the seconds as a float64); one past it is refused, with
// nothing written.
func FuzzAppendSeconds(f *testing.F) {
	for _, d := range []int64{0, 1, 999_999_999, 1_000_000_000, 1_500_000_000, -1, 210_000, 1<<52 - 1, 1 << 52, -(1 << 52), 1<<63 - 1} {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		d := time.Duration(n)
		buf := buffer.NewPool().Get()
		ok := logline.AppendSeconds(buf, d)
		if inside := n < 1<<52 && n > -(1<<52); ok != inside {
			t.Fatalf("%d ns: written %v, want %v", n, ok, inside)
		}
		want := strconv.AppendFloat(nil, float64(d)/float64(time.Second), 'f', -1, 64)
		switch {
		case ok && buf.String() != string(want):
			t.Errorf("%d ns: wrote %s, zap writes %s", n, buf.String(), want)
		case !ok && buf.Len() != 0:
			t.Errorf("%d ns: refused, but wrote %q", n, buf.String())
		}
	})
}

// TestPlain: what zap's JSON encoder writes as it is.
func TestPlain(t *testing.T) {
	for s, want := range map[string]bool{
		"": true, "0a1b-2": true, "/v1/completions?x=1&y=<2>": true, "127.0.0.1:80": true, "del\x7f": true,
		`q"uote`: false, `back\slash`: false, "tab\t": false, "nl\n": false, "é": false, "\xff": false,
	} {
		if got := logline.Plain(s); got != want {
			t.Errorf("Plain(%q) = %v, want %v", s, got, want)
		}
	}
}
