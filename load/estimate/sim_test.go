package estimate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/slotgate/slotgate/load/estimate"
	"github.com/slotgate/slotgate/sim"
)

var simTexts = []string{
	"a", "abcd", "abcde", "hello world", "héllo", "🙂🙂", "The quick brown fox jumps over the lazy dog.",
	"<html>&amp;</html>", "tab\there\nnewline \"quoted\" back\\slash", "日本語のテキスト", "\u2028\u2029",
	"invalid \xff\xfe utf-8", "cut \xe2\x82", strings.Repeat("x", 4097),
}

// TestAgreesWithSimTokenizer checks the estimate against enginesim's own
// token counts, for bodies as json.Marshal writes them (escapes included).
func TestAgreesWithSimTokenizer(t *testing.T) {
	for _, text := range simTexts {
		body, _ := json.Marshal(map[string]any{"prompt": text})
		_, e, _ := estimateParts([][]byte{body}, noLimit)
		if want := simCountDecoded(text); e.PromptTokens != want {
			t.Errorf("prompt %q: estimate %d, sim %d", text, e.PromptTokens, want)
		}
		msgs := []sim.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: text}}
		body, _ = json.Marshal(map[string]any{"messages": []map[string]string{
			{"role": "system", "content": "be brief"}, {"role": "user", "content": text},
		}})
		_, e, _ = estimateParts([][]byte{body}, noLimit)
		if want := sim.CountChat(decodedMsgs(msgs)); e.PromptTokens != want {
			t.Errorf("chat %q: estimate %d, sim %d", text, e.PromptTokens, want)
		}
	}
}

// simCountDecoded counts text as enginesim sees it after a JSON round trip
// (json.Marshal turns invalid UTF-8 into U+FFFD).
func simCountDecoded(text string) int {
	b, _ := json.Marshal(text)
	var s string
	json.Unmarshal(b, &s)
	return sim.CountText(s)
}

func decodedMsgs(msgs []sim.Message) []sim.Message {
	out := make([]sim.Message, len(msgs))
	for i, m := range msgs {
		b, _ := json.Marshal(m.Content)
		out[i].Role = m.Role
		json.Unmarshal(b, &out[i].Content)
	}
	return out
}

// TestAgainstEnginesim sends requests through a PromptReader to enginesim
// and its answers through a StreamCounter: the estimate must equal
// enginesim's usage.prompt_tokens, and the streamed count its
// completion_tokens.
func TestAgainstEnginesim(t *testing.T) {
	e, err := sim.New(sim.Options{SpeedupRatio: 1e4})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	h, err := sim.NewHandler(sim.ServerOptions{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	tests := []struct {
		name, path, body string
		exact            bool
	}{
		{"completions text", "/v1/completions", `{"prompt":"The capital of France is","max_tokens":7,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, false},
		{"completions ids", "/v1/completions", `{"prompt":[101,2023,2003,1037,3231],"max_tokens":5,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, true},
		{"completions batch of one", "/v1/completions", `{"prompt":[[7,8,9]],"max_tokens":3,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, true},
		{"chat", "/v1/chat/completions", `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is the capital of France? \u00e9\ud83d\ude42"}],"max_completion_tokens":9,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, false},
		{"chat parts", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"Describe "},{"type":"text","text":"this."}]}],"max_tokens":4,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, false},
		{"chat whole response", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hello there, engine"}],"max_tokens":6,"ignore_eos":true}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr := estimate.NewPromptReader(strings.NewReader(tt.body), 1<<20)
			resp, err := srv.Client().Post(srv.URL+tt.path, "application/json", pr)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, %v: %s", resp.StatusCode, err, raw)
			}
			est, ok := pr.Estimate()
			if !ok || !est.Known || est.Exact != tt.exact {
				t.Fatalf("estimate %+v, %v", est, ok)
			}
			usage := lastUsage(t, raw)
			if est.PromptTokens != usage.PromptTokens {
				t.Errorf("prompt tokens: estimate %d, enginesim %d", est.PromptTokens, usage.PromptTokens)
			}
			if est.MaxTokens != usage.CompletionTokens {
				t.Errorf("max tokens: estimate %d, enginesim generated %d with ignore_eos", est.MaxTokens, usage.CompletionTokens)
			}
			// Counting chunks alone, without the usage event, must agree too:
			// enginesim sends one token a chunk.
			c := counts([][]byte{withoutUsage(raw, est.Stream)})
			if c.Generated != usage.CompletionTokens || !c.FirstToken {
				t.Errorf("counted %+v, enginesim generated %d", c, usage.CompletionTokens)
			}
			if c := counts([][]byte{raw}); c.Generated != usage.CompletionTokens || !c.Exact || c.PromptTokens != usage.PromptTokens {
				t.Errorf("with usage: %+v, enginesim %+v", c, usage)
			}
		})
	}
}

type usageJSON struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// lastUsage is the usage of a whole response or of the last event with one.
func lastUsage(t *testing.T, raw []byte) usageJSON {
	t.Helper()
	var u usageJSON
	found := false
	docs := []string{string(raw)}
	if strings.HasPrefix(string(raw), "data:") {
		docs = nil
		for line := range strings.Lines(string(raw)) {
			if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok && d != "[DONE]" {
				docs = append(docs, d)
			}
		}
	}
	for _, d := range docs {
		var v struct{ Usage *usageJSON }
		if json.Unmarshal([]byte(d), &v) == nil && v.Usage != nil {
			u, found = *v.Usage, true
		}
	}
	if !found {
		t.Fatalf("no usage in %s", raw)
	}
	return u
}

// withoutUsage drops the events that carry usage from a stream; a whole
// response is returned as it is.
func withoutUsage(raw []byte, stream bool) []byte {
	if !stream {
		return raw
	}
	var b strings.Builder
	for ev := range strings.SplitSeq(string(raw), "\n\n") {
		if ev != "" && !strings.Contains(ev, `"usage":{`) {
			fmt.Fprintf(&b, "%s\n\n", ev)
		}
	}
	return []byte(b.String())
}
