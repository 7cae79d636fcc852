package sim

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestErrorAnswers checks refusals: status, OpenAI's error shape
// {"error":{"message","type","param":null,"code"}}, and the message.
func TestErrorAnswers(t *testing.T) {
	s := startServer(t, Options{SpeedupRatio: 1000, MaxModelLen: 100}, true, ServerOptions{})
	long := strings.Repeat("abcd", 100) // 100 tokens
	tests := []struct {
		name, method, path, body string
		status                   int
		errType, message         string
	}{
		{"malformed JSON", "POST", "/v1/completions", `{"prompt":`, 400, "BadRequestError", "Invalid JSON"},
		{"not an object", "POST", "/v1/completions", `[1,2]`, 400, "BadRequestError", "Invalid JSON"},
		{"wrong field type", "POST", "/v1/completions", `{"prompt":"x","stream":"yes"}`, 400, "BadRequestError", "Invalid JSON"},
		{"missing prompt", "POST", "/v1/completions", `{"model":"sim-model"}`, 400, "BadRequestError", "'prompt' is required"},
		{"null prompt", "POST", "/v1/completions", `{"prompt":null}`, 400, "BadRequestError", "'prompt' is required"},
		{"empty prompt", "POST", "/v1/completions", `{"prompt":""}`, 400, "BadRequestError", "must not be empty"},
		{"empty token list", "POST", "/v1/completions", `{"prompt":[]}`, 400, "BadRequestError", "must not be empty"},
		{"bad prompt type", "POST", "/v1/completions", `{"prompt":{"a":1}}`, 400, "BadRequestError", "must be a string"},
		{"two prompts", "POST", "/v1/completions", `{"prompt":["a","b"]}`, 400, "BadRequestError", "one prompt per request"},
		{"negative token id", "POST", "/v1/completions", `{"prompt":[1,-2]}`, 400, "BadRequestError", "out of vocabulary"},
		{"prompt too long", "POST", "/v1/completions", `{"prompt":"` + long + `"}`, 400, "BadRequestError", "maximum context length is 100 tokens"},
		{"prompt + max_tokens too long", "POST", "/v1/completions", `{"prompt":"abcd","max_tokens":100}`, 400, "BadRequestError", "(100 > 100 - 1)"},
		{"max_tokens 0", "POST", "/v1/completions", `{"prompt":"abcd","max_tokens":0}`, 400, "BadRequestError", "at least 1"},
		{"n 2", "POST", "/v1/completions", `{"prompt":"abcd","n":2}`, 400, "BadRequestError", "n must be 1"},
		{"stream_options without stream", "POST", "/v1/completions", `{"prompt":"abcd","stream_options":{}}`, 400, "BadRequestError", "stream=True"},
		{"unknown model", "POST", "/v1/completions", `{"model":"gpt-9","prompt":"abcd"}`, 404, "NotFoundError", "`gpt-9` does not exist"},
		{"missing messages", "POST", "/v1/chat/completions", `{"prompt":"abcd"}`, 400, "BadRequestError", "'messages' is required"},
		{"empty messages", "POST", "/v1/chat/completions", `{"messages":[]}`, 400, "BadRequestError", "must not be empty"},
		{"message without role", "POST", "/v1/chat/completions", `{"messages":[{"content":"x"}]}`, 400, "BadRequestError", "role is required"},
		{"image part", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400, "BadRequestError", "only text parts"},
		{"chat too long", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_completion_tokens":96}`, 400, "BadRequestError", "too large: 96"},
		{"unknown path", "GET", "/v2/everything", ``, 404, "NotFoundError", "Not Found"},
		{"wrong method", "GET", "/v1/completions", ``, 405, "MethodNotAllowedError", "not allowed"},
		{"wrong method on health", "POST", "/health", ``, 405, "MethodNotAllowedError", "not allowed"},
		{"tokenize missing prompt", "POST", "/tokenize", `{}`, 400, "BadRequestError", "'prompt' is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tt.method, s.url+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := s.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			checkErrorAnswer(t, resp, tt.status, tt.errType, tt.message)
			if tt.status == http.StatusMethodNotAllowed && resp.Header.Get("Allow") == "" {
				t.Error("405 without an Allow header")
			}
		})
	}
	if st := s.engine.Stats().Ranks[0]; st.Steps != 0 {
		t.Errorf("refused requests reached the engine: %+v", st)
	}
}

func checkErrorAnswer(t *testing.T, resp *http.Response, status int, errType, message string) {
	t.Helper()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d (%s), want %d: %s", resp.StatusCode, resp.Header.Get("Content-Type"), status, raw)
	}
	var body struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &body); err != nil || len(body.Error) != 4 {
		t.Fatalf("not OpenAI's error shape (message, type, param, code): %s", raw)
	}
	var msg, typ string
	var code int
	_ = json.Unmarshal(body.Error["message"], &msg)
	_ = json.Unmarshal(body.Error["type"], &typ)
	_ = json.Unmarshal(body.Error["code"], &code)
	if typ != errType || code != status || string(body.Error["param"]) != "null" || !strings.Contains(msg, message) {
		t.Fatalf("error %s, want type %s, code %d, param null, message containing %q", raw, errType, status, message)
	}
}

// Past --max-num-queued-reqs (running + waiting) requests get 503 at once,
// as vllm-project/vllm#49445; room frees as soon as a client leaves.
func TestQueueFull503(t *testing.T) {
	s := startServer(t, Options{MaxNumQueuedReqs: 1}, false, ServerOptions{}) // no loop: requests wait
	ctx, cancel := context.WithCancel(t.Context())
	first := s.post(t, ctx, "/v1/completions", `{"prompt":"a","stream":true}`)
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first request: %d", first.StatusCode)
	}
	for _, body := range []string{`{"prompt":"b"}`, `{"prompt":"b","stream":true}`} {
		resp := s.post(t, t.Context(), "/v1/completions", body)
		checkErrorAnswer(t, resp, http.StatusServiceUnavailable, "ServiceUnavailableError", "max_num_queued_reqs=1")
	}
	cancel()
	eventually(t, "the first request to leave the queue", func() bool { return s.engine.Stats().Ranks[0].Waiting == 0 })
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	if resp := s.post(t, ctx2, "/v1/completions", `{"prompt":"c","stream":true}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the first left: %d", resp.StatusCode)
	}
}
