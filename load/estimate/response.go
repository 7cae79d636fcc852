package estimate

// Roles and fields of an OpenAI response object, streamed chunk or whole.
const (
	qOther     role = iota
	qRoot           // the response or chunk object
	qChoices        // the array at root.choices
	qChoice         // an object inside qChoices
	qDelta          // choice.delta (streamed) or choice.message (whole)
	qUsage          // the object at root.usage
	qToolCalls      // the array at delta.tool_calls
	qToolCall       // an object inside qToolCalls
	qFunction       // the object at tool_call.function
)

const (
	gOther field = iota
	gChoices
	gUsage
	gError
	gObject
	gText  // choice.text, delta.content, delta.reasoning_content, delta.reasoning
	gDelta // choice.delta or choice.message
	gCompletion
	gPrompt
	gToolCalls // delta.tool_calls
	gFunction  // tool_call.function
)

// responseHandler reads one response object: how many choices carry
// generated text, its bytes, the usage, and whether it is an error.
type responseHandler struct {
	roles [maxRoles]role
	depth int
	field field

	choiceText   bool // the choice being read has non-empty text
	textChoices  int  // choices with non-empty text
	textBytes    int  // bytes of that text (for a whole response)
	usage        bool // a usage object was read
	completion   int  // usage.completion_tokens, -1 if absent
	promptTokens int  // usage.prompt_tokens, -1 if absent
	isError      bool
	complete     bool // the root object closed
}

func (h *responseHandler) reset() {
	*h = responseHandler{completion: -1, promptTokens: -1}
}

func (h *responseHandler) top() role {
	if h.depth == 0 || h.depth > maxRoles {
		return qOther
	}
	return h.roles[h.depth-1]
}

func (h *responseHandler) open(object bool) {
	r := qOther
	switch parent := h.top(); {
	case h.depth == 0 && object:
		r = qRoot
	case parent == qRoot && h.field == gChoices && !object:
		r = qChoices
	case parent == qRoot && h.field == gUsage && object:
		r, h.usage, h.completion, h.promptTokens = qUsage, true, -1, -1
	case parent == qRoot && h.field == gError:
		h.isError = true
	case parent == qChoices && object:
		r, h.choiceText = qChoice, false
	case parent == qChoice && h.field == gDelta && object:
		r = qDelta
	case parent == qDelta && h.field == gToolCalls && !object:
		r = qToolCalls
	case parent == qToolCalls && object:
		r = qToolCall
	case parent == qToolCall && h.field == gFunction && object:
		r = qFunction
	}
	if h.depth < maxRoles {
		h.roles[h.depth] = r
	}
	h.depth++
}

func (h *responseHandler) close() {
	if h.top() == qChoice && h.choiceText {
		h.textChoices++
	}
	h.depth--
	h.complete = h.depth == 0
}

func (h *responseHandler) key(name []byte, whole bool) {
	h.field = gOther
	if !whole {
		return
	}
	switch h.top() {
	case qRoot:
		switch string(name) {
		case "choices":
			h.field = gChoices
		case "usage":
			h.field = gUsage
		case "error":
			h.field = gError
		case "object":
			h.field = gObject
		}
	case qChoice:
		switch string(name) {
		case "text":
			h.field = gText
		case "delta", "message":
			h.field = gDelta
		}
	case qDelta:
		switch string(name) {
		case "content", "reasoning_content", "reasoning":
			h.field = gText
		case "tool_calls":
			h.field = gToolCalls
		}
	case qToolCall:
		if string(name) == "function" {
			h.field = gFunction
		}
	case qFunction:
		// A tool call's name and arguments are generated tokens: a
		// stream of tool calls carries no content at all (vLLM sends
		// content null), and its first token is its first argument.
		switch string(name) {
		case "name", "arguments":
			h.field = gText
		}
	case qUsage:
		switch string(name) {
		case "completion_tokens":
			h.field = gCompletion
		case "prompt_tokens":
			h.field = gPrompt
		}
	}
}

func (h *responseHandler) str(n int, prefix []byte, whole bool) {
	switch top := h.top(); {
	case (top == qChoice || top == qDelta || top == qFunction) && h.field == gText && n > 0:
		h.choiceText = true
		h.textBytes += n
	case top == qRoot && h.field == gError:
		h.isError = true
	case top == qRoot && h.field == gObject && whole && string(prefix) == "error":
		h.isError = true
	}
}

func (h *responseHandler) num(v int64, isInt bool) {
	if h.top() != qUsage || !isInt || v < 0 || v > 1<<31-1 {
		return
	}
	switch h.field {
	case gCompletion:
		h.completion = int(v)
	case gPrompt:
		h.promptTokens = int(v)
	}
}

func (h *responseHandler) lit(c byte) {
	if h.top() == qRoot && h.field == gError && c != 'n' {
		h.isError = true
	}
}
