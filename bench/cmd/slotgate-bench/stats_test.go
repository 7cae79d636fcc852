package main

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 50}, {99, 99}, {100, 100}, {0, 1}, {1, 1}} {
		if got := percentile(d, tc.p); got != tc.want {
			t.Errorf("percentile(1..100, %v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile(nil) = %v, want 0", got)
	}
	if got := percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("percentile([7], 99) = %v, want 7", got)
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name          string
		in            []float64
		med, min, max float64
	}{
		{"odd", []float64{3, 1, 2}, 2, 1, 3},
		{"even", []float64{4, 1, 3, 2}, 2.5, 1, 4},
		{"one", []float64{5}, 5, 5, 5},
		{"empty", nil, 0, 0, 0},
	} {
		s := summarize(tc.in)
		if s.Median != tc.med || s.Min != tc.min || s.Max != tc.max {
			t.Errorf("%s: summarize(%v) = %+v, want median %v min %v max %v", tc.name, tc.in, s, tc.med, tc.min, tc.max)
		}
	}
	in := []float64{3, 1, 2}
	summarize(in)
	if in[0] != 3 {
		t.Errorf("summarize sorted its argument in place: %v", in)
	}
}
