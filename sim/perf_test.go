package sim

import (
	"math"
	"testing"
	"time"
)

// The expected values restate Dynamo mocker's polynomials by hand, so a
// changed constant fails here.
func TestStepTimeModel(t *testing.T) {
	tests := []struct {
		name     string
		prefill  int
		decoding bool
		usage    float64
		speedup  float64
		wantMs   float64
	}{
		{"idle", 0, false, 0, 1, 0},
		{"prefill 1000", 1000, false, 0, 1, 16.50142 + 15.18344 + 0.4209989},
		{"prefill 8192", 8192, false, 0, 1, 16.50142 + 0.01518344*8192 + 4.209989e-07*8192*8192},
		{"decode empty cache", 0, true, 0, 1, 5.74},
		{"decode half", 0, true, 0.5, 1, 5.74 + 54.01*0.5 - 25.74*0.25},
		{"decode full", 0, true, 1, 1, 5.74 + 54.01 - 25.74},
		{"mixed", 100, true, 0.5, 1, 16.50142 + 1.518344 + 0.004209989 + 5.74 + 27.005 - 6.435},
		{"speedup 100", 100, true, 0.5, 100, (16.50142 + 1.518344 + 0.004209989 + 5.74 + 27.005 - 6.435) / 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StepDuration(tt.prefill, tt.decoding, tt.usage, tt.speedup)
			want := time.Duration(tt.wantMs * float64(time.Millisecond))
			if d := got - want; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("StepDuration = %v, want %v", got, want)
			}
		})
	}
	if got := DecodeMillis(-10); got != decodeMinMs {
		t.Errorf("DecodeMillis floor: got %v, want %v", got, decodeMinMs)
	}
	if math.Abs(PrefillMillis(1)-16.516603861) > 1e-6 {
		t.Errorf("PrefillMillis(1) = %v", PrefillMillis(1))
	}
}

func TestOptionsValidation(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"defaults", Options{}, ""},
		{"tiny pool", Options{NumGPUBlocks: 2, BlockSize: 16, MaxModelLen: 16, MaxNumSeqs: 1, MaxNumBatchedTokens: 16}, ""},
		{"one block", Options{NumGPUBlocks: 1}, "NumGPUBlocks"},
		{"model longer than the pool", Options{NumGPUBlocks: 11, BlockSize: 16, MaxModelLen: 161}, "MaxModelLen"},
		{"budget below sequences", Options{MaxNumSeqs: 300, MaxNumBatchedTokens: 299}, "MaxNumBatchedTokens"},
		{"negative queue", Options{MaxNumQueuedReqs: -1}, "MaxNumQueuedReqs"},
		{"negative speedup", Options{SpeedupRatio: -1}, "SpeedupRatio"},
		{"infinite speedup", Options{SpeedupRatio: math.Inf(1)}, "SpeedupRatio"},
		{"negative ranks", Options{DataParallelSize: -2}, "DataParallelSize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.wantErr != "" && (err == nil || !contains(err.Error(), tt.wantErr)):
				t.Fatalf("New: error %v, want one naming %s", err, tt.wantErr)
			}
		})
	}
}
