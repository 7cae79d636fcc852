package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestStreaming checks the SSE format chunk by chunk against vLLM's:
// data: lines, one chunk per token, the chat role chunk first, the
// finish_reason on the last token only, the include_usage chunk with empty
// choices, continuous usage on every chunk, and data: [DONE] last. The
// text must equal the non-streaming answer to the same request.
func TestStreaming(t *testing.T) {
	const maxTokens = 7
	tests := []struct {
		name       string
		path       string
		prompt     string // the prompt or messages field
		promptToks int
		options    string // stream_options, or ""
		usage      bool
		continuous bool
	}{
		{"completions", "/v1/completions", `"prompt":"hello world"`, 3, "", false, false},
		{"completions with usage", "/v1/completions", `"prompt":"hello world"`, 3, `{"include_usage":true}`, true, false},
		{"empty stream options mean usage", "/v1/completions", `"prompt":"hello world"`, 3, `{}`, true, false},
		{"usage turned off", "/v1/completions", `"prompt":"hello world"`, 3, `{"include_usage":false}`, false, false},
		{"continuous usage", "/v1/completions", `"prompt":[1,2,3,4,5]`, 5, `{"include_usage":true,"continuous_usage_stats":true}`, true, true},
		{"chat", "/v1/chat/completions", `"messages":[{"role":"user","content":"hello world"}]`, 7, "", false, false},
		{"chat with usage", "/v1/chat/completions", `"messages":[{"role":"user","content":"hello world"}]`, 7, `{"include_usage":true}`, true, false},
		{"chat continuous", "/v1/chat/completions", `"messages":[{"role":"system","content":"x"},{"role":"user","content":[{"type":"text","text":"hi"}]}]`, 10,
			`{"continuous_usage_stats":true}`, true, true},
	}
	s := fastServer(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chat := strings.Contains(tt.path, "chat")
			body := fmt.Sprintf(`{"model":"sim-model",%s,"max_tokens":%d,"ignore_eos":true,"stream":true`, tt.prompt, maxTokens)
			if tt.options != "" {
				body += `,"stream_options":` + tt.options
			}
			resp := s.post(t, t.Context(), tt.path, body+"}")
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			events := readEvents(t, resp.Body)
			if len(events) == 0 || events[len(events)-1] != "[DONE]" {
				t.Fatalf("the stream does not end with [DONE]: %q", events)
			}
			text := checkChunks(t, events[:len(events)-1], chat, tt.promptToks, maxTokens, tt.usage, tt.continuous)

			var full struct {
				Choices []struct {
					Text         string
					Message      struct{ Role, Content string }
					FinishReason string `json:"finish_reason"`
				}
				Usage usage
			}
			s.postJSON(t, tt.path, fmt.Sprintf(`{%s,"max_tokens":%d,"ignore_eos":true}`, tt.prompt, maxTokens), http.StatusOK, &full)
			got := full.Choices[0].Text + full.Choices[0].Message.Content
			if got != text || full.Choices[0].FinishReason != FinishLength {
				t.Errorf("non-streaming answer %q (%s), streamed %q", got, full.Choices[0].FinishReason, text)
			}
			if want := (usage{tt.promptToks, tt.promptToks + maxTokens, maxTokens}); full.Usage != want {
				t.Errorf("non-streaming usage %+v, want %+v", full.Usage, want)
			}
		})
	}
}

// checkChunks checks every event before [DONE] and returns the streamed
// text.
func checkChunks(t *testing.T, events []string, chat bool, prompt, tokens int, wantUsage, continuous bool) string {
	t.Helper()
	object, prefix := "text_completion", "cmpl-"
	if chat {
		object, prefix = "chat.completion.chunk", "chatcmpl-"
	}
	want := tokens
	if chat {
		want++ // the role chunk
	}
	if wantUsage {
		want++
	}
	if len(events) != want {
		t.Fatalf("%d events, want %d: %q", len(events), want, events)
	}
	var text strings.Builder
	id := ""
	for i, ev := range events {
		c := decodeStrict(t, ev)
		if id == "" {
			id, _ = c["id"].(string)
		}
		if c["id"] != id || !strings.HasPrefix(id, prefix) || c["object"] != object || c["model"] != "sim-model" || c["created"] == nil {
			t.Fatalf("event %d header fields: %s", i, ev)
		}
		choices, _ := c["choices"].([]any)
		if wantUsage && i == len(events)-1 {
			checkUsage(t, ev, c, prompt, tokens)
			if len(choices) != 0 {
				t.Fatalf("the usage chunk has choices: %s", ev)
			}
			continue
		}
		if len(choices) != 1 {
			t.Fatalf("event %d has %d choices: %s", i, len(choices), ev)
		}
		ch := choices[0].(map[string]any)
		tok := i // the index of the token this event carries
		if chat {
			tok--
		}
		checkChoice(t, ev, ch, chat, tok, tokens)
		if chat {
			if content, ok := ch["delta"].(map[string]any)["content"].(string); ok {
				text.WriteString(content)
			}
		} else {
			text.WriteString(ch["text"].(string))
		}
		if _, has := c["usage"]; has != continuous {
			t.Fatalf("event %d: usage present %v, want %v: %s", i, has, continuous, ev)
		} else if continuous {
			checkUsage(t, ev, c, prompt, tok+1)
		}
	}
	return text.String()
}

// checkChoice checks one choice: index 0, logprobs null, finish_reason
// null except on the last token; the chat role chunk is tok == -1.
func checkChoice(t *testing.T, ev string, ch map[string]any, chat bool, tok, tokens int) {
	t.Helper()
	if ch["index"] != json.Number("0") {
		t.Fatalf("choice index: %s", ev)
	}
	if v, ok := ch["logprobs"]; !ok || v != nil {
		t.Fatalf("logprobs must be present and null: %s", ev)
	}
	finish, present := ch["finish_reason"]
	switch {
	case !present:
		t.Fatalf("no finish_reason: %s", ev)
	case tok == tokens-1 && finish != FinishLength:
		t.Fatalf("the last token's finish_reason is %v: %s", finish, ev)
	case tok != tokens-1 && finish != nil:
		t.Fatalf("token %d has finish_reason %v: %s", tok, finish, ev)
	}
	if !chat {
		if s, _ := ch["text"].(string); s == "" {
			t.Fatalf("token %d has no text: %s", tok, ev)
		}
		return
	}
	delta, _ := ch["delta"].(map[string]any)
	if tok == -1 {
		if delta["role"] != "assistant" || delta["content"] != "" || len(delta) != 2 {
			t.Fatalf("the first chat chunk must be the assistant role with empty content: %s", ev)
		}
		return
	}
	if s, _ := delta["content"].(string); s == "" || delta["role"] != nil {
		t.Fatalf("token %d delta: %s", tok, ev)
	}
}

func checkUsage(t *testing.T, ev string, c map[string]any, prompt, completion int) {
	t.Helper()
	u, _ := c["usage"].(map[string]any)
	want := map[string]any{
		"prompt_tokens":     json.Number(fmt.Sprint(prompt)),
		"completion_tokens": json.Number(fmt.Sprint(completion)),
		"total_tokens":      json.Number(fmt.Sprint(prompt + completion)),
	}
	for k, v := range want {
		if u[k] != v {
			t.Fatalf("usage %s = %v, want %v: %s", k, u[k], v, ev)
		}
	}
}

// Without ignore_eos the output may stop early, deterministically: the
// length and text depend only on the seed and the prompt.
func TestEarlyStopThroughHTTP(t *testing.T) {
	s := fastServer(t)
	type answer struct {
		Choices []struct {
			Text         string
			FinishReason string `json:"finish_reason"`
		}
		Usage usage
	}
	for i := range 8 {
		prompt := fmt.Sprintf("prompt number %d", i)
		body := fmt.Sprintf(`{"prompt":%q,"max_tokens":200}`, prompt)
		var a, b answer
		s.postJSON(t, "/v1/completions", body, http.StatusOK, &a)
		s.postJSON(t, "/v1/completions", body, http.StatusOK, &b)
		n := OutputLen(Key(0, 0, TokenizeText(prompt)), 200, false)
		if a.Usage.CompletionTokens != n || a.Choices[0].FinishReason != FinishReason(n, 200) {
			t.Errorf("%q: %d tokens (%s), want %d (%s)", prompt, a.Usage.CompletionTokens, a.Choices[0].FinishReason, n, FinishReason(n, 200))
		}
		if a.Choices[0].Text != b.Choices[0].Text || strings.Count(a.Choices[0].Text, " ") != n {
			t.Errorf("%q: two answers differ or have the wrong length:\n%q\n%q", prompt, a.Choices[0].Text, b.Choices[0].Text)
		}
		var seeded answer
		s.postJSON(t, "/v1/completions", fmt.Sprintf(`{"prompt":%q,"max_tokens":200,"seed":7}`, prompt), http.StatusOK, &seeded)
		if seeded.Choices[0].Text == a.Choices[0].Text {
			t.Errorf("%q: the request seed did not change the text", prompt)
		}
	}
}
