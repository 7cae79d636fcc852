package sim

import (
	"strings"
	"testing"
)

func TestOutputLen(t *testing.T) {
	t.Run("ignore_eos gives exactly max_tokens", func(t *testing.T) {
		for key := range uint64(200) {
			for _, max := range []int{1, 16, 500} {
				if got := OutputLen(key, max, true); got != max {
					t.Fatalf("OutputLen(%d, %d, true) = %d", key, max, got)
				}
			}
		}
	})
	t.Run("without it, deterministic, within 1..max, sometimes shorter", func(t *testing.T) {
		const max = 64
		shorter := 0
		for key := range uint64(1000) {
			n := OutputLen(key, max, false)
			if n != OutputLen(key, max, false) {
				t.Fatalf("OutputLen(%d) not deterministic", key)
			}
			if n < 1 || n > max {
				t.Fatalf("OutputLen(%d, %d, false) = %d, want 1..%d", key, max, n, max)
			}
			if n < max {
				shorter++
			}
		}
		// P(stop within 64 tokens) = 1 - (63/64)^64 ≈ 0.63.
		if shorter < 500 || shorter > 750 {
			t.Errorf("%d of 1000 outputs stopped early, want about 630", shorter)
		}
	})
}

func TestFinishReason(t *testing.T) {
	tests := []struct {
		n, max int
		want   string
	}{{16, 16, FinishLength}, {3, 16, FinishStop}, {1, 1, FinishLength}}
	for _, tt := range tests {
		if got := FinishReason(tt.n, tt.max); got != tt.want {
			t.Errorf("FinishReason(%d, %d) = %q, want %q", tt.n, tt.max, got, tt.want)
		}
	}
}

func TestKeyAndWords(t *testing.T) {
	prompt := TokenizeText("hello world")
	base := Key(0, 0, prompt)
	if Key(0, 0, prompt) != base {
		t.Fatal("Key is not deterministic")
	}
	for name, other := range map[string]uint64{
		"engine seed":  Key(1, 0, prompt),
		"request seed": Key(0, 1, prompt),
		"prompt":       Key(0, 0, TokenizeText("hello world!")),
	} {
		if other == base {
			t.Errorf("changing the %s did not change the key", name)
		}
	}
	text := func(key uint64) string {
		var b strings.Builder
		for i := range 32 {
			w := Word(key, i)
			if w == "" || strings.Contains(w, " ") {
				t.Fatalf("Word(%d, %d) = %q", key, i, w)
			}
			b.WriteString(w + " ")
		}
		return b.String()
	}
	first, second := text(base), text(base)
	if first != second {
		t.Error("Word is not deterministic")
	}
	if text(base) == text(Key(1, 0, prompt)) {
		t.Error("another seed gave the same text")
	}
}
