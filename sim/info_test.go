package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

func TestModels(t *testing.T) {
	s := startServer(t, Options{MaxModelLen: 4096}, true, ServerOptions{Model: "org/llm", Dialect: DialectSGLang})
	resp, err := s.client.Get(s.url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	m := decodeStrict(t, string(raw))
	data, _ := m["data"].([]any)
	if m["object"] != "list" || len(data) != 1 {
		t.Fatalf("/v1/models: %s", raw)
	}
	card := data[0].(map[string]any)
	want := map[string]any{
		"id": "org/llm", "object": "model", "owned_by": "sglang", "root": "org/llm",
		"max_model_len": json.Number("4096"), "parent": nil,
	}
	for k, v := range want {
		if got, ok := card[k]; !ok || got != v {
			t.Errorf("model card %s = %v, want %v", k, got, v)
		}
	}
}

func TestHealthAndVersion(t *testing.T) {
	s := fastServer(t)
	resp, err := s.client.Get(s.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) != 0 {
		t.Fatalf("/health: %d %q", resp.StatusCode, body)
	}
	var v map[string]string
	resp, err = s.client.Get(s.url + "/version")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if v = map[string]string{}; resp.StatusCode != http.StatusOK || decodeInto(raw, &v) != nil || v["version"] == "" {
		t.Fatalf("/version: %d %s", resp.StatusCode, raw)
	}
}

// /tokenize counts exactly what usage.prompt_tokens reports.
func TestTokenize(t *testing.T) {
	s := startServer(t, Options{SpeedupRatio: 1000, MaxModelLen: 2048}, true, ServerOptions{})
	tests := []struct {
		name, body string
		count      int
	}{
		{"text", `{"prompt":"hello world"}`, 3},
		{"token ids", `{"prompt":[5,6,7,8]}`, 4},
		{"chat", `{"messages":[{"role":"user","content":"hello world"}]}`, ChatMessageOverhead + 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got tokenizeResponse
			s.postJSON(t, "/tokenize", tt.body, http.StatusOK, &got)
			if got.Count != tt.count || len(got.Tokens) != tt.count || got.MaxModelLen != 2048 {
				t.Fatalf("/tokenize %s = %+v, want count %d", tt.body, got, tt.count)
			}
			path, gen := "/v1/completions", tt.body[:len(tt.body)-1]+`,"max_tokens":1}`
			if tt.name == "chat" {
				path = "/v1/chat/completions"
			}
			var answer struct{ Usage usage }
			s.postJSON(t, path, gen, http.StatusOK, &answer)
			if answer.Usage.PromptTokens != tt.count {
				t.Fatalf("usage.prompt_tokens %d, /tokenize count %d", answer.Usage.PromptTokens, tt.count)
			}
		})
	}
}
