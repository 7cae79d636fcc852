package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// DefaultMaxTokens is the output limit of a request that sets none,
// OpenAI's completions default, lowered to what fits in MaxModelLen.
const DefaultMaxTokens = 16

// genRequest is the body of /v1/completions and /v1/chat/completions; each
// endpoint reads its own prompt field. Sampling fields are accepted and
// ignored.
type genRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            json.RawMessage `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	Seed                *int64          `json:"seed"`
	N                   *int            `json:"n"`
}

// streamOptions defaults, as vLLM's StreamOptions, apply only when the
// object is present: include_usage true, continuous_usage_stats false.
type streamOptions struct {
	IncludeUsage         *bool `json:"include_usage"`
	ContinuousUsageStats *bool `json:"continuous_usage_stats"`
}

// decodeBody reads a JSON body of at most maxBodyBytes into v.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return &apiError{status: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("Request body larger than %d bytes.", maxBodyBytes)}
		}
		return badRequest("Could not read the request body: %s", err.Error())
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("Invalid JSON body: %s", err.Error())
	}
	return nil
}

// isAbsent reports whether a field was missing or null.
func isAbsent(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// parsePrompt returns the token ids of a completions prompt: a string, a
// list of token ids, or a list holding one of either. enginesim serves one
// prompt per request.
func parsePrompt(raw json.RawMessage) ([]int, *apiError) {
	if isAbsent(raw) {
		return nil, badRequest("Field 'prompt' is required.")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		if text == "" {
			return nil, badRequest("The prompt must not be empty.")
		}
		return TokenizeText(text), nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		return checkIDs(ids)
	}
	var batch []json.RawMessage
	if json.Unmarshal(raw, &batch) == nil && len(batch) > 0 {
		if len(batch) != 1 {
			return nil, badRequest("enginesim serves one prompt per request, got %d.", len(batch))
		}
		if s := strings.TrimSpace(string(batch[0])); strings.HasPrefix(s, "[") || strings.HasPrefix(s, `"`) {
			return parsePrompt(batch[0])
		}
	}
	return nil, badRequest("The prompt must be a string, a list of token ids, or a list holding one of either.")
}

func checkIDs(ids []int) ([]int, *apiError) {
	if len(ids) == 0 {
		return nil, badRequest("The prompt must not be empty.")
	}
	for _, id := range ids {
		if id < 0 {
			return nil, badRequest("Token id %d is out of vocabulary.", id)
		}
	}
	return ids, nil
}

// parseMessages returns the messages of a chat request, their content
// flattened to text: a string, null, or a list of {"type":"text"} parts.
func parseMessages(raw json.RawMessage) ([]Message, *apiError) {
	if isAbsent(raw) {
		return nil, badRequest("Field 'messages' is required.")
	}
	var in []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, badRequest("Field 'messages' must be a list of {role, content} objects: %s", err.Error())
	}
	if len(in) == 0 {
		return nil, badRequest("Field 'messages' must not be empty.")
	}
	out := make([]Message, len(in))
	for i, m := range in {
		if m.Role == "" {
			return nil, badRequest("messages[%d].role is required.", i)
		}
		content, e := parseContent(m.Content, i)
		if e != nil {
			return nil, e
		}
		out[i] = Message{Role: m.Role, Content: content}
	}
	return out, nil
}

func parseContent(raw json.RawMessage, i int) (string, *apiError) {
	if isAbsent(raw) {
		return "", nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest("messages[%d].content must be a string or a list of content parts.", i)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", badRequest("messages[%d].content: only text parts are supported, got %q.", i, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// resolveMaxTokens checks the output limit against MaxModelLen, with
// vLLM's messages.
func resolveMaxTokens(requested *int, prompt, maxModelLen int) (int, *apiError) {
	if prompt >= maxModelLen {
		return 0, badRequest("This model's maximum context length is %d tokens. However, your request has %d input tokens. "+
			"Please reduce the length of the input messages.", maxModelLen, prompt)
	}
	if requested == nil {
		return min(DefaultMaxTokens, maxModelLen-prompt), nil
	}
	if *requested < 1 {
		return 0, badRequest("max_tokens must be at least 1, got %d.", *requested)
	}
	if prompt+*requested > maxModelLen {
		return 0, badRequest("'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens "+
			"and your request has %d input tokens (%d > %d - %d).", *requested, maxModelLen, prompt, *requested, maxModelLen, prompt)
	}
	return *requested, nil
}
