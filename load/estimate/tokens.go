package estimate

const (
	// BytesPerToken is the UTF-8 bytes of text per estimated token, the
	// "4 characters a token" rule of GIE, llm-d and AIBrix, and enginesim's
	// tokenizer (sim.BytesPerToken).
	BytesPerToken = 4
	// ChatMessageOverhead is the tokens a chat template adds around each
	// message's content (start, role, separator, end), as enginesim counts
	// them (sim.ChatMessageOverhead); real templates add a few as well.
	ChatMessageOverhead = 4
)

// TextTokens is the estimated tokens of a text of n UTF-8 bytes:
// ceil(n/BytesPerToken), so at least 1 for a non-empty text and 0 for none.
func TextTokens(n int) int {
	if n <= 0 {
		return 0
	}
	return (n + BytesPerToken - 1) / BytesPerToken
}

// Blocks is the KV blocks that tokens fill, ceil(tokens/blockSize): 0 when
// tokens is 0 or less, or when blockSize is unknown (0 or less).
func Blocks(tokens, blockSize int) int {
	if tokens <= 0 || blockSize <= 0 {
		return 0
	}
	return (tokens + blockSize - 1) / blockSize
}
