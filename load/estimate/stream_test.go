package estimate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/load/estimate"
)

func TestStreamCounterSamples(t *testing.T) {
	tests := []struct {
		file string
		want estimate.Counts
	}{
		{"vllm_completions_stream.sse", estimate.Counts{Generated: 5, FirstToken: true, Done: true}},
		{"vllm_chat_stream_usage.sse", estimate.Counts{Generated: 6, Exact: true, PromptTokens: 42, FirstToken: true, Done: true}},
		{"vllm_chat_continuous_usage.sse", estimate.Counts{Generated: 3, Exact: true, PromptTokens: 12, FirstToken: true, Done: true}},
		{"vllm_error_midstream.sse", estimate.Counts{Generated: 1, FirstToken: true, Done: true, Error: true}},
		{"vllm_reasoning_stream.sse", estimate.Counts{Generated: 3, FirstToken: true, Done: true}},
		{"vllm_chat_response.json", estimate.Counts{Generated: 8, Exact: true, PromptTokens: 42, FirstToken: true, Done: true}},
		{"vllm_completion_response_no_usage.json", estimate.Counts{Generated: 8, FirstToken: true, Done: true}},
		{"vllm_error_response.json", estimate.Counts{Done: true, Error: true}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			variants := map[string]string{"LF": string(b)}
			if strings.HasSuffix(tt.file, ".sse") {
				variants["CRLF"] = strings.ReplaceAll(string(b), "\n", "\r\n")
				variants["CR"] = strings.ReplaceAll(string(b), "\n", "\r")
			}
			for name, body := range variants {
				for i, parts := range splits([]byte(body)) {
					if got := counts(parts); got != tt.want {
						t.Fatalf("%s, split %d: got %+v, want %+v", name, i, got, tt.want)
					}
				}
			}
		})
	}
}

func TestStreamCounterEvents(t *testing.T) {
	text := func(s string) string { return `{"choices":[{"index":0,"text":"` + s + `"}]}` }
	tests := []struct {
		name   string
		stream string
		want   estimate.Counts
	}{
		{"empty", "", estimate.Counts{}},
		{"no space after data:", "data:" + text("a") + "\n\n", estimate.Counts{Generated: 1, FirstToken: true}},
		{"empty text is no token", "data: " + text("") + "\n\n", estimate.Counts{}},
		{"comments and other fields", ": keep-alive\nevent: message\nid: 7\nretry: 100\ndata: " + text("a") + "\n\n: ping\n\n",
			estimate.Counts{Generated: 1, FirstToken: true}},
		{"data split over lines", "data: {\"choices\":\ndata: [{\"text\":\"a\"}]}\n\n", estimate.Counts{Generated: 1, FirstToken: true}},
		{"bare data field", "data\ndata: " + text("a") + "\n\n", estimate.Counts{Generated: 1, FirstToken: true}},
		{"field named like data", "datum: " + text("a") + "\n\n", estimate.Counts{}},
		{"two choices in one event", `data: {"choices":[{"index":0,"text":"a"},{"index":1,"text":"b"}]}` + "\n\n",
			estimate.Counts{Generated: 2, FirstToken: true}},
		{"malformed event skipped", "data: {\"choices\":[{\"text\":\"a\"}\n\ndata: " + text("b") + "\n\n",
			estimate.Counts{Generated: 1, FirstToken: true}},
		{"last event without blank line", "data: " + text("a") + "\n\ndata: " + text("b"),
			estimate.Counts{Generated: 2, FirstToken: true}},
		{"usage then more text", "data: " + `{"choices":[],"usage":{"completion_tokens":5,"prompt_tokens":2}}` + "\n\ndata: " + text("a") + "\n\n",
			estimate.Counts{Generated: 6, PromptTokens: 2, FirstToken: true}},
		{"null usage", "data: " + `{"choices":[{"text":"a"}],"usage":null}` + "\n\n", estimate.Counts{Generated: 1, FirstToken: true}},
		{"usage without completion_tokens", "data: " + `{"choices":[{"text":"a"}],"usage":{"prompt_tokens":9}}` + "\n\n",
			estimate.Counts{Generated: 1, PromptTokens: 9, FirstToken: true}},
		{"DONE with trailing space is not DONE", "data: [DONE] \n\n", estimate.Counts{}},
		{"error string", `data: {"error":"boom"}` + "\n\n", estimate.Counts{Error: true}},
		{"error null is no error", `data: {"error":null,"choices":[]}` + "\n\n", estimate.Counts{}},
		{"nested text is not generated text", `data: {"choices":[{"logprobs":{"text":"zz"}}],"x":{"text":"y"}}` + "\n\n", estimate.Counts{}},
		{"whole JSON with leading whitespace", "\n  " + `{"choices":[{"text":"abcde"}]}`, estimate.Counts{Generated: 2, FirstToken: true, Done: true}},
		{"whole JSON truncated", `{"choices":[{"text":"abcde"}]`, estimate.Counts{}},
		{"tool call name is a token", `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null,` +
			`"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}` + "\n\n",
			estimate.Counts{Generated: 1, FirstToken: true}},
		{"tool call arguments are tokens", `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\"Paris\"}"}}]}}]}` + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}}]}` + "\n\n",
			estimate.Counts{Generated: 2, FirstToken: true}},
		{"tool call without name or arguments is no token", `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function"}]}}]}` + "\n\n",
			estimate.Counts{}},
		{"arguments outside a tool call are not text", `data: {"choices":[{"index":0,"delta":{"function":{"arguments":"x"},"tool_calls":[{"arguments":"y"}]}}]}` + "\n\n",
			estimate.Counts{}},
		{"whole message with tool calls", `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"function":{"name":"f","arguments":"{\"a\":12345678}"}}]}}]}`,
			estimate.Counts{Generated: 4, FirstToken: true, Done: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, parts := range splits([]byte(tt.stream)) {
				if got := counts(parts); got != tt.want {
					t.Fatalf("split %d: got %+v, want %+v", i, got, tt.want)
				}
			}
		})
	}
}

// TestStreamCounterFirstToken checks that FirstToken turns on with the
// first event that carries text, and not before.
func TestStreamCounterFirstToken(t *testing.T) {
	s := estimate.NewStreamCounter()
	s.Write([]byte(`data: {"choices":[{"delta":{"role":"assistant","content":""}}]}` + "\n\n"))
	if s.Counts().FirstToken {
		t.Fatal("FirstToken on an event without text")
	}
	s.Write([]byte(`data: {"choices":[{"delta":{"content":"Hi"}}]}` + "\n"))
	if s.Counts().FirstToken {
		t.Fatal("FirstToken before the event ended")
	}
	s.Write([]byte("\n"))
	if c := s.Counts(); !c.FirstToken || c.Generated != 1 {
		t.Fatalf("after the first text event: %+v", c)
	}
}

func TestStreamCounterOversizedEvent(t *testing.T) {
	big := `data: {"choices":[{"text":"` + strings.Repeat("x", estimate.MaxEventBytes) + `"}]}` + "\n\n"
	small := `data: {"choices":[{"text":"a"}]}` + "\n\n"
	s := estimate.NewStreamCounter()
	for _, part := range []string{small, big, small, "data: [DONE]\n\n"} {
		s.Write([]byte(part))
	}
	want := estimate.Counts{Generated: 2, FirstToken: true, Done: true}
	if got := s.Counts(); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
