package loadgen

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
)

// words are the prompt's vocabulary: three letters each, so a word with the
// space before it is about one token of four characters in common BPE
// vocabularies. Random words keep the engine's prefix cache from serving
// every prompt after the first.
var words = [...]string{
	"the", "and", "for", "are", "but", "not", "you", "all", "any", "can",
	"had", "her", "was", "one", "our", "out", "day", "get", "has", "him",
	"his", "how", "man", "new", "now", "old", "see", "two", "way", "who",
	"boy", "did", "its", "let", "put", "say", "she", "too", "use", "sun",
	"sea", "sky", "red", "big", "cat", "dog", "run", "top", "end", "car",
	"far", "low", "key", "box", "air", "art", "bed", "job", "law", "map",
	"oil", "pen", "tea", "war",
}

// requestOf returns request i, a function of the seed and i alone: each
// request has its own PRNG stream, so the closed loop's workers need no
// shared generator and any schedule sends the same requests.
func requestOf(o *Options, i int64) Request {
	rng := rand.New(rand.NewPCG(o.Seed, uint64(i)))
	p := o.PromptTokens.Sample(rng)
	m := o.MaxTokens.Sample(rng)
	return Request{Index: i, Prompt: promptText(rng, p), PromptTokens: p, MaxTokens: m, Stream: o.Stream}
}

// promptText returns n random words separated by spaces: about 4n
// characters, about n tokens.
func promptText(rng *rand.Rand, n int) string {
	var b strings.Builder
	b.Grow(4 * n)
	for k := range n {
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// apiRequest is the body of a completion or chat completion request.
type apiRequest struct {
	Model         string         `json:"model"`
	Prompt        string         `json:"prompt,omitempty"`
	Messages      []message      `json:"messages,omitempty"`
	MaxTokens     int            `json:"max_tokens"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
	IgnoreEOS     bool           `json:"ignore_eos"`
}

// body encodes req as the JSON body for o's endpoint. stream_options is
// sent only with stream: true, since engines refuse it otherwise.
func body(o *Options, req Request) []byte {
	r := apiRequest{Model: o.Model, MaxTokens: req.MaxTokens, Stream: req.Stream, IgnoreEOS: true}
	if o.Endpoint == EndpointChat {
		r.Messages = []message{{Role: "user", Content: req.Prompt}}
	} else {
		r.Prompt = req.Prompt
	}
	if req.Stream {
		r.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	b, err := json.Marshal(r)
	if err != nil {
		// Strings, ints and bools always encode.
		panic("loadgen: encode request: " + err.Error())
	}
	return b
}
