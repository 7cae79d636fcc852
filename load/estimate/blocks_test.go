package estimate_test

import (
	"testing"

	"github.com/slotgate/slotgate/load/estimate"
)

func TestBlocks(t *testing.T) {
	tests := []struct {
		name              string
		tokens, blockSize int
		want              int
	}{
		{"no tokens", 0, 16, 0},
		{"negative tokens", -3, 16, 0},
		{"unknown block size", 100, 0, 0},
		{"negative block size", 100, -1, 0},
		{"one token", 1, 16, 1},
		{"exactly one block", 16, 16, 1},
		{"one over", 17, 16, 2},
		{"many", 1000, 16, 63},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := estimate.Blocks(tt.tokens, tt.blockSize); got != tt.want {
				t.Errorf("Blocks(%d, %d) = %d, want %d", tt.tokens, tt.blockSize, got, tt.want)
			}
		})
	}
}

func TestTextTokens(t *testing.T) {
	for n, want := range map[int]int{-1: 0, 0: 0, 1: 1, 4: 1, 5: 2, 8: 2, 100: 25} {
		if got := estimate.TextTokens(n); got != want {
			t.Errorf("TextTokens(%d) = %d, want %d", n, got, want)
		}
	}
}
