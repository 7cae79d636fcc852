package loadgen_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/loadgen"
)

func TestParseDist(t *testing.T) {
	for _, tc := range []struct {
		spec     string
		ok       bool
		str      string // String() of the result
		min, max int    // every sample in min..max
	}{
		{"64", true, "64", 64, 64},
		{" 64 ", true, "64", 64, 64},
		{"fixed:5", true, "5", 5, 5},
		{"1", true, "1", 1, 1},
		{"1000000", true, "1000000", 1000000, 1000000},
		{"uniform:100:500", true, "uniform:100:500", 100, 500},
		{"UNIFORM: 16 : 128", true, "uniform:16:128", 16, 128},
		{"uniform:7:7", true, "uniform:7:7", 7, 7},
		{"normal:300:50", true, "normal:300:50", 1, loadgen.MaxDistValue},
		{"normal:2.5:0", true, "normal:2.5:0", 3, 3}, // math.Round: half away from zero
		{"normal:1:1000", true, "normal:1:1000", 1, loadgen.MaxDistValue},
		{"", false, "", 0, 0},
		{"0", false, "", 0, 0},
		{"-5", false, "", 0, 0},
		{"1.5", false, "", 0, 0},
		{"1000001", false, "", 0, 0},
		{"abc", false, "", 0, 0},
		{"fixed:", false, "", 0, 0},
		{"fixed:1:2", false, "", 0, 0},
		{"uniform:500:100", false, "", 0, 0},
		{"uniform:0:10", false, "", 0, 0},
		{"uniform:10", false, "", 0, 0},
		{"uniform:1:2:3", false, "", 0, 0},
		{"uniform:1.5:3", false, "", 0, 0},
		{"normal:0.5:1", false, "", 0, 0},
		{"normal:300:-1", false, "", 0, 0},
		{"normal:NaN:1", false, "", 0, 0},
		{"normal:300:Inf", false, "", 0, 0},
		{"normal:300", false, "", 0, 0},
		{"poisson:3", false, "", 0, 0},
		{":5", false, "", 0, 0},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			d, err := loadgen.ParseDist(tc.spec)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseDist(%q) error = %v, want ok = %v", tc.spec, err, tc.ok)
			}
			if !tc.ok {
				if d.Valid() {
					t.Errorf("ParseDist(%q) failed but returned the valid %v", tc.spec, d)
				}
				return
			}
			if got := d.String(); got != tc.str {
				t.Errorf("String() = %q, want %q", got, tc.str)
			}
			rng := rand.New(rand.NewPCG(1, 1))
			seen := map[int]bool{}
			for range 2000 {
				n := d.Sample(rng)
				if n < tc.min || n > tc.max {
					t.Fatalf("Sample() = %d, outside %d..%d", n, tc.min, tc.max)
				}
				seen[n] = true
			}
			if tc.min != tc.max && tc.max-tc.min < 1000 && len(seen) < 2 {
				t.Errorf("2000 samples of %s gave only %v", d, seen)
			}
		})
	}
}

// TestUniformCoversRange: every value of a small uniform range comes up.
func TestUniformCoversRange(t *testing.T) {
	d, err := loadgen.ParseDist("uniform:3:6")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	seen := map[int]int{}
	for range 4000 {
		seen[d.Sample(rng)]++
	}
	for v := 3; v <= 6; v++ {
		if seen[v] < 800 { // 1000 expected each
			t.Errorf("value %d came up %d times in 4000: %v", v, seen[v], seen)
		}
	}
}

// FuzzParseDist: ParseDist never panics, and what it accepts is valid,
// samples within bounds, and round-trips through String.
func FuzzParseDist(f *testing.F) {
	for _, s := range []string{
		"64", "uniform:100:500", "normal:300:50", "fixed:1", "normal:1:0", "uniform:1:1000000",
		"", ":", "::", "uniform::", "normal:1e6:1e6", "normal:0x1p4:1", "+5", "1_0", "normal:-0:0",
		"UNIFORM:2:3", "normal:300:50:1", "\x00", "normal:1e-320:1", strings.Repeat("9", 40),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		d, err := loadgen.ParseDist(spec)
		if err != nil {
			if d.Valid() {
				t.Fatalf("ParseDist(%q) = %v, error %v: a valid Dist with an error", spec, d, err)
			}
			return
		}
		if !d.Valid() {
			t.Fatalf("ParseDist(%q) = %v, accepted but not valid", spec, d)
		}
		again, err := loadgen.ParseDist(d.String())
		if err != nil || again != d {
			t.Fatalf("ParseDist(%q) = %v; its String %q parses to %v, %v", spec, d, d.String(), again, err)
		}
		rng := rand.New(rand.NewPCG(uint64(len(spec)), 9))
		for range 20 {
			if n := d.Sample(rng); n < 1 || n > loadgen.MaxDistValue {
				t.Fatalf("%v.Sample() = %d", d, n)
			}
		}
	})
}
