package sim

import (
	"encoding/json"
	"net/http"
)

// modelList is vLLM's GET /v1/models answer.
type modelList struct {
	Object string      `json:"object"`
	Data   []modelCard `json:"data"`
}

type modelCard struct {
	ID          string            `json:"id"`
	Object      string            `json:"object"`
	Created     int64             `json:"created"`
	OwnedBy     string            `json:"owned_by"`
	Root        string            `json:"root"`
	Parent      *string           `json:"parent"`
	MaxModelLen int               `json:"max_model_len"`
	Permission  []modelPermission `json:"permission"`
}

type modelPermission struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Created            int64   `json:"created"`
	AllowCreateEngine  bool    `json:"allow_create_engine"`
	AllowSampling      bool    `json:"allow_sampling"`
	AllowLogprobs      bool    `json:"allow_logprobs"`
	AllowSearchIndices bool    `json:"allow_search_indices"`
	AllowView          bool    `json:"allow_view"`
	AllowFineTuning    bool    `json:"allow_fine_tuning"`
	Organization       string  `json:"organization"`
	Group              *string `json:"group"`
	IsBlocking         bool    `json:"is_blocking"`
}

// ownedBy is the owned_by each engine reports.
func (s *server) ownedBy() string {
	switch s.dialect {
	case DialectSGLang:
		return "sglang"
	case DialectTRTLLM:
		return "tensorrt_llm"
	}
	return "vllm"
}

func (s *server) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []modelCard{{
		ID: s.model, Object: "model", Created: s.created, OwnedBy: s.ownedBy(), Root: s.model,
		MaxModelLen: s.engine.Options().MaxModelLen,
		Permission: []modelPermission{{
			ID: "modelperm-enginesim", Object: "model_permission", Created: s.created,
			AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*",
		}},
	}}})
}

// health is 200 with an empty body while the engine runs, 503 once it
// stopped, as vLLM's /health on EngineDeadError.
func (s *server) health(w http.ResponseWriter, _ *http.Request) {
	if s.engine.Stopped() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *server) version(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": "enginesim"})
}

// tokenizeRequest is vLLM's: a prompt, or the chat form with messages.
type tokenizeRequest struct {
	Model    string          `json:"model"`
	Prompt   json.RawMessage `json:"prompt"`
	Messages json.RawMessage `json:"messages"`
}

type tokenizeResponse struct {
	Count       int       `json:"count"`
	MaxModelLen int       `json:"max_model_len"`
	Tokens      []int     `json:"tokens"`
	TokenStrs   *[]string `json:"token_strs"`
}

// tokenize is vLLM's POST /tokenize, with enginesim's tokenizer: the
// counts are exactly the prompt_tokens a generation request reports.
func (s *server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if e := decodeBody(w, r, &req); e != nil {
		writeAPIError(w, e)
		return
	}
	if req.Model != "" && req.Model != s.model {
		writeError(w, http.StatusNotFound, "The model `"+req.Model+"` does not exist.")
		return
	}
	var ids []int
	var e *apiError
	if !isAbsent(req.Messages) {
		var msgs []Message
		if msgs, e = parseMessages(req.Messages); e == nil {
			ids = TokenizeChat(msgs)
		}
	} else {
		ids, e = parsePrompt(req.Prompt)
	}
	if e != nil {
		writeAPIError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, tokenizeResponse{Count: len(ids), MaxModelLen: s.engine.Options().MaxModelLen, Tokens: ids})
}
