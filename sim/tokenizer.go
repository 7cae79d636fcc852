package sim

import "hash/fnv"

// The tokenizer is enginesim's own, deterministic and model-free, so that
// usage.prompt_tokens is reproducible:
//
//   - text is cut into runs of BytesPerToken UTF-8 bytes, the last one
//     shorter: a non-empty text of n bytes is ceil(n/4) tokens, "" is none;
//   - a prompt of token ids is those ids, counted exactly;
//   - a chat is, per message, ChatMessageOverhead tokens (start, role,
//     separator, end) around the tokens of its content; no generation
//     prompt is added.
const (
	// BytesPerToken is the text bytes per token, the "4 characters a token"
	// estimate of GIE, llm-d and AIBrix.
	BytesPerToken = 4
	// ChatMessageOverhead is the tokens each chat message adds to its content.
	ChatMessageOverhead = 4
	// VocabSize bounds the ids the tokenizer gives text.
	VocabSize = 32000
)

// Ids of the chat template's tokens; text tokens are above them.
const (
	tokenMessageStart = 1
	tokenSeparator    = 2
	tokenMessageEnd   = 3
	firstTextToken    = 256
)

// Message is one chat message, its content already flattened to text.
type Message struct {
	Role    string
	Content string
}

// CountText is the number of tokens of text: ceil(len(text)/4) bytes.
func CountText(text string) int {
	return (len(text) + BytesPerToken - 1) / BytesPerToken
}

// CountChat is the number of tokens of a chat: the content tokens of each
// message plus ChatMessageOverhead per message.
func CountChat(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += ChatMessageOverhead + CountText(m.Content)
	}
	return n
}

// TokenizeText returns the token ids of text; len(result) == CountText(text).
func TokenizeText(text string) []int {
	return appendText(make([]int, 0, CountText(text)), text)
}

// TokenizeChat returns the token ids of a chat; len(result) == CountChat(msgs).
func TokenizeChat(msgs []Message) []int {
	ids := make([]int, 0, CountChat(msgs))
	for _, m := range msgs {
		ids = append(ids, tokenMessageStart, textID(m.Role), tokenSeparator)
		ids = appendText(ids, m.Content)
		ids = append(ids, tokenMessageEnd)
	}
	return ids
}

func appendText(ids []int, text string) []int {
	for i := 0; i < len(text); i += BytesPerToken {
		ids = append(ids, textID(text[i:min(i+BytesPerToken, len(text))]))
	}
	return ids
}

// textID maps a piece of text to an id in [firstTextToken, VocabSize).
func textID(piece string) int {
	h := fnv.New32a()
	h.Write([]byte(piece))
	return firstTextToken + int(h.Sum32()%(VocabSize-firstTextToken))
}
