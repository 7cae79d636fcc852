package sim

import (
	"slices"
	"testing"
)

func TestCountText(t *testing.T) {
	tests := []struct {
		name string
		text string
		want int
	}{
		{"empty", "", 0},
		{"one byte", "a", 1},
		{"exactly four", "abcd", 1},
		{"five", "abcde", 2},
		{"eight", "abcdefgh", 2},
		{"multi-byte runes count bytes", "héllo", 2}, // 6 bytes
		{"emoji", "🙂🙂", 2},                           // 8 bytes
		{"hundred", string(make([]byte, 100)), 25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CountText(tt.text); got != tt.want {
				t.Errorf("CountText(%q) = %d, want %d", tt.text, got, tt.want)
			}
			ids := TokenizeText(tt.text)
			if len(ids) != tt.want {
				t.Errorf("len(TokenizeText(%q)) = %d, want %d", tt.text, len(ids), tt.want)
			}
			for _, id := range ids {
				if id < firstTextToken || id >= VocabSize {
					t.Errorf("token id %d outside [%d, %d)", id, firstTextToken, VocabSize)
				}
			}
		})
	}
}

func TestCountChat(t *testing.T) {
	tests := []struct {
		name string
		msgs []Message
		want int
	}{
		{"one empty message", []Message{{Role: "user"}}, ChatMessageOverhead},
		{"one message", []Message{{Role: "user", Content: "hello world"}}, ChatMessageOverhead + 3},
		{"two messages", []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}},
			2*ChatMessageOverhead + 2 + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CountChat(tt.msgs); got != tt.want {
				t.Errorf("CountChat = %d, want %d", got, tt.want)
			}
			if got := len(TokenizeChat(tt.msgs)); got != tt.want {
				t.Errorf("len(TokenizeChat) = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestTokenizeIsDeterministic(t *testing.T) {
	text := "The quick brown fox jumps over the lazy dog."
	a, b := TokenizeText(text), TokenizeText(text)
	if !slices.Equal(a, b) {
		t.Fatalf("two tokenizations of one text differ:\n%v\n%v", a, b)
	}
	if slices.Equal(a, TokenizeText(text+"!")) {
		t.Error("different texts gave the same tokens")
	}
	chat := []Message{{Role: "user", Content: text}}
	if !slices.Equal(TokenizeChat(chat), TokenizeChat(chat)) {
		t.Error("two tokenizations of one chat differ")
	}
	if slices.Equal(TokenizeChat(chat), TokenizeChat([]Message{{Role: "system", Content: text}})) {
		t.Error("the role does not change the chat's tokens")
	}
}
