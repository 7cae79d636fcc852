package sim

// The JSON of answers, in vLLM's field order (engine-metrics.md §5).

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// chunk is one streamed event of either endpoint: Object is
// "text_completion" or "chat.completion.chunk"; Choices holds
// completionChoice or chatChunkChoice values, or is empty for the usage
// chunk.
type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []any  `json:"choices"`
	Usage   *usage `json:"usage,omitempty"`
}

type completionChoice struct {
	Index        int     `json:"index"`
	Text         string  `json:"text"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

type chatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        chatDelta `json:"delta"`
	Logprobs     any       `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatChoice struct {
	Index        int         `json:"index"`
	Message      chatMessage `json:"message"`
	Logprobs     any         `json:"logprobs"`
	FinishReason *string     `json:"finish_reason"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// response is the non-streaming answer.
type response struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []any  `json:"choices"`
	Usage   *usage `json:"usage"`
}

func (o *output) response(p Progress) response {
	text, reason := o.text(p.Tokens), p.FinishReason
	r := response{ID: o.id, Created: o.created, Model: o.model, Usage: o.usage(p.Tokens)}
	if o.chat {
		r.Object = "chat.completion"
		r.Choices = []any{chatChoice{Message: chatMessage{Role: "assistant", Content: text}, FinishReason: &reason}}
	} else {
		r.Object = "text_completion"
		r.Choices = []any{completionChoice{Text: text, FinishReason: &reason}}
	}
	return r
}

func (o *output) newChunk(choices ...any) chunk {
	obj := "text_completion"
	if o.chat {
		obj = "chat.completion.chunk"
	}
	if choices == nil {
		choices = []any{}
	}
	return chunk{ID: o.id, Object: obj, Created: o.created, Model: o.model, Choices: choices}
}

// roleChunk is the chat stream's first event: the assistant role and empty
// content.
func (o *output) roleChunk() chunk {
	empty := ""
	c := o.newChunk(chatChunkChoice{Delta: chatDelta{Role: "assistant", Content: &empty}})
	if o.continuousUsage {
		c.Usage = o.usage(0)
	}
	return c
}

// tokenChunk carries output token i; finish is "" except on the last one.
func (o *output) tokenChunk(i int, finish string) chunk {
	var reason *string
	if finish != "" {
		reason = &finish
	}
	text := o.token(i)
	var c chunk
	if o.chat {
		c = o.newChunk(chatChunkChoice{Delta: chatDelta{Content: &text}, FinishReason: reason})
	} else {
		c = o.newChunk(completionChoice{Text: text, FinishReason: reason})
	}
	if o.continuousUsage {
		c.Usage = o.usage(i + 1)
	}
	return c
}

// usageChunk is include_usage's final event: no choices, the totals.
func (o *output) usageChunk(completion int) chunk {
	c := o.newChunk()
	c.Usage = o.usage(completion)
	return c
}
