package main

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// kind is a request's class: a short chat prompt or a huge token-id one.
type kind string

const (
	kindShort kind = "short"
	kindHuge  kind = "huge"
)

// span is an inclusive range of counts, drawn uniformly.
type span struct{ Min, Max int }

func (s span) draw(rng *rand.Rand) int { return s.Min + rng.IntN(s.Max-s.Min+1) }

func (s span) String() string { return strconv.Itoa(s.Min) + "-" + strconv.Itoa(s.Max) }

// workload is the open-loop mix every configuration receives.
type workload struct {
	Seed         uint64        `json:"seed"`
	Rate         float64       `json:"rate"` // mean arrivals per second
	Duration     time.Duration `json:"duration"`
	HugeFraction float64       `json:"huge_fraction"`
	ShortPrompt  span          `json:"short_prompt_words"` // about a token a word
	ShortOutput  span          `json:"short_max_tokens"`
	HugePrompt   span          `json:"huge_prompt_tokens"` // exact: token ids
	HugeOutput   int           `json:"huge_max_tokens"`
}

// arrival is one request of the workload: when it is sent, counted from
// the start of the run, and what it asks for.
type arrival struct {
	Index        int
	At           time.Duration
	Kind         kind
	PromptTokens int
	MaxTokens    int
}

// Streams of the PCG seeded with the workload's seed: arrival gaps have
// their own, and request i uses stream i for its shape and stream
// bodyStream+i for its prompt, so any schedule sends the same requests.
const (
	gapStream  = 1 << 63
	bodyStream = 1 << 62
)

// plan returns the workload's arrivals in order: Poisson gaps of mean
// 1/Rate until Duration, each request's class and lengths drawn from its
// own stream. It is a function of w alone.
func plan(w workload) []arrival {
	gaps := rand.New(rand.NewPCG(w.Seed, gapStream))
	var out []arrival
	at := time.Duration(0)
	for i := 0; ; i++ {
		at += time.Duration(gaps.ExpFloat64() / w.Rate * float64(time.Second))
		if at >= w.Duration {
			return out
		}
		rng := rand.New(rand.NewPCG(w.Seed, uint64(i)))
		a := arrival{Index: i, At: at, Kind: kindShort}
		if rng.Float64() < w.HugeFraction {
			a.Kind, a.PromptTokens, a.MaxTokens = kindHuge, w.HugePrompt.draw(rng), w.HugeOutput
		} else {
			a.PromptTokens, a.MaxTokens = w.ShortPrompt.draw(rng), w.ShortOutput.draw(rng)
		}
		out = append(out, a)
	}
}

// words are the short prompts' vocabulary: three letters and a space, about
// one token each.
var words = [...]string{
	"the", "and", "for", "are", "but", "not", "you", "all", "any", "can",
	"had", "her", "was", "one", "our", "out", "day", "get", "has", "him",
	"sea", "sky", "red", "big", "cat", "dog", "run", "top", "end", "car",
	"far", "low",
}

// endpoint is where a's request goes: short prompts are chat, huge ones
// plain completions with a list of token ids, whose count the engine and
// slotgate both know exactly.
func (a arrival) endpoint() string {
	if a.Kind == kindHuge {
		return "/v1/completions"
	}
	return "/v1/chat/completions"
}

// body is a's request body, streamed, EOS ignored, a function of seed and
// a. Random words and ids keep any prefix cache from serving one prompt
// from another.
func (a arrival) body(seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, bodyStream+uint64(a.Index)))
	req := map[string]any{"model": "sim-model", "max_tokens": a.MaxTokens, "stream": true, "ignore_eos": true}
	if a.Kind == kindHuge {
		ids := make([]int, a.PromptTokens)
		for i := range ids {
			ids[i] = 1 + rng.IntN(999)
		}
		req["prompt"] = ids
	} else {
		ws := make([]string, a.PromptTokens)
		for i := range ws {
			ws[i] = words[rng.IntN(len(words))]
		}
		req["messages"] = []map[string]string{{"role": "user", "content": strings.Join(ws, " ")}}
	}
	b, err := json.Marshal(req)
	if err != nil {
		panic("encode request: " + err.Error()) // strings and ints always encode
	}
	return b
}
