package busy

import (
	"math"
	"testing"
)

// TestSaturatingUint64 pins the conversion to Rust's `as u64`. Through
// Evaluate the difference cannot show on amd64, whose own conversion of a
// too-large value happens to exceed every int64 token count; Go leaves it
// implementation-defined, so other platforms may differ.
func TestSaturatingUint64(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want uint64
	}{
		{in: math.NaN(), want: 0},
		{in: math.Inf(-1), want: 0},
		{in: -1, want: 0},
		{in: 0, want: 0},
		{in: 1.9, want: 1},
		{in: 0x1p63, want: 1 << 63},
		{in: 0x1p64, want: math.MaxUint64},
		{in: 1e300, want: math.MaxUint64},
		{in: math.Inf(1), want: math.MaxUint64},
	} {
		if got := saturatingUint64(tc.in); got != tc.want {
			t.Errorf("saturatingUint64(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
