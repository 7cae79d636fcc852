package estimate_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/slotgate/slotgate/load/estimate"
)

// splits returns ways to cut b into pieces: whole, a byte at a time, and
// a few random cuts seeded from b, so that a failure reproduces.
func splits(b []byte) [][][]byte {
	out := [][][]byte{{b}}
	one := make([][]byte, len(b))
	for i := range b {
		one[i] = b[i : i+1]
	}
	out = append(out, one)
	for seed := uint64(1); seed <= 3; seed++ {
		r := rand.New(rand.NewPCG(seed, uint64(len(b))))
		var parts [][]byte
		for rest := b; len(rest) > 0; {
			n := min(len(rest), 1+r.IntN(16))
			parts, rest = append(parts, rest[:n]), rest[n:]
		}
		out = append(out, parts)
	}
	return out
}

// chunkReader returns its parts one Read at a time, each at most as long
// as the caller's buffer.
type chunkReader struct{ parts [][]byte }

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.parts) > 0 && len(r.parts[0]) == 0 {
		r.parts = r.parts[1:]
	}
	if len(r.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.parts[0])
	r.parts[0] = r.parts[0][n:]
	return n, nil
}

// estimateParts runs parts through a PromptReader and returns what came
// out and the estimate.
func estimateParts(parts [][]byte, limit int64) ([]byte, estimate.Estimate, error) {
	pr := estimate.NewPromptReader(&chunkReader{parts: parts}, limit)
	out, err := io.ReadAll(pr)
	e, ok := pr.Estimate()
	if !ok {
		return out, e, io.ErrUnexpectedEOF
	}
	return out, e, err
}

// counts runs parts through a StreamCounter.
func counts(parts [][]byte) estimate.Counts {
	s := estimate.NewStreamCounter()
	for _, p := range parts {
		s.Write(p)
	}
	s.Close()
	return s.Counts()
}

// reference is the estimate computed the slow way, with encoding/json, for
// a body within the limit.
func reference(body []byte) estimate.Estimate {
	var root map[string]json.RawMessage
	if !json.Valid(body) || json.Unmarshal(body, &root) != nil || root == nil {
		return estimate.Estimate{}
	}
	var e estimate.Estimate
	promptSeen, textSeen, msgsSeen := false, false, false
	if raw, ok := root["prompt"]; ok {
		switch kind(raw) {
		case '"':
			promptSeen, textSeen = true, true
			e.PromptTokens += estimate.TextTokens(len(decodeString(raw)))
		case '[':
			promptSeen = true
			for _, el := range decodeArray(raw) {
				switch kind(el) {
				case '"':
					textSeen = true
					e.PromptTokens += estimate.TextTokens(len(decodeString(el)))
				case '0':
					e.PromptTokens++
				case '[':
					for _, id := range decodeArray(el) {
						if kind(id) == '0' {
							e.PromptTokens++
						}
					}
				}
			}
		}
	}
	if raw, ok := root["messages"]; ok && kind(raw) == '[' {
		msgsSeen = true
		for _, m := range decodeArray(raw) {
			if kind(m) != '{' {
				continue
			}
			n := 0
			content := decodeObject(m)["content"]
			switch kind(content) {
			case '"':
				n = len(decodeString(content))
			case '[':
				for _, part := range decodeArray(content) {
					if kind(part) == '{' {
						if text := decodeObject(part)["text"]; kind(text) == '"' {
							n += len(decodeString(text))
						}
					}
				}
			}
			e.PromptTokens += estimate.ChatMessageOverhead + estimate.TextTokens(n)
		}
	}
	e.MaxTokens = positiveInt(root["max_completion_tokens"])
	if e.MaxTokens == 0 {
		e.MaxTokens = positiveInt(root["max_tokens"])
	}
	e.Stream = string(root["stream"]) == "true"
	e.Known = promptSeen || msgsSeen
	e.Exact = e.Known && !textSeen && !msgsSeen
	return e
}

// kind is the first byte of a JSON value, '0' for any number.
func kind(raw json.RawMessage) byte {
	s := bytes.TrimLeft(raw, " \t\r\n")
	if len(s) == 0 {
		return 0
	}
	if s[0] == '-' || s[0] >= '0' && s[0] <= '9' {
		return '0'
	}
	return s[0]
}

func decodeString(raw json.RawMessage) string {
	var s string
	json.Unmarshal(raw, &s)
	return s
}

func decodeArray(raw json.RawMessage) []json.RawMessage {
	var a []json.RawMessage
	json.Unmarshal(raw, &a)
	return a
}

func decodeObject(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	json.Unmarshal(raw, &m)
	return m
}

func positiveInt(raw json.RawMessage) int {
	v, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 32)
	if err != nil || v <= 0 {
		return 0
	}
	return int(v)
}
