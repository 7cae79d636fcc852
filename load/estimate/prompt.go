package estimate

import "math"

// Estimate is what a request body says about the work it asks for.
type Estimate struct {
	// PromptTokens is the estimated prompt length in tokens: token ids
	// counted exactly, text at TextTokens of its UTF-8 bytes, each chat
	// message plus ChatMessageOverhead. When Partial, it is what the first
	// limit bytes held, a lower bound; when the body was malformed, 0.
	PromptTokens int
	// Exact reports that the prompt was token ids only, counted exactly.
	Exact bool
	// Known reports that the whole body was read and was a well-formed JSON
	// object with a "prompt" (string or array) or "messages" (array).
	Known bool
	// Partial reports that the body was longer than the limit, so the
	// estimate stopped there (Known is then false).
	Partial bool
	// MaxTokens is max_completion_tokens, else max_tokens, when a positive
	// integer; 0 when unset or unknown.
	MaxTokens int
	// Stream reports "stream": true.
	Stream bool
}

// role is what a container on the path is, as far as the estimate cares.
type role uint8

const (
	rOther     role = iota
	rRoot           // the request object
	rPrompt         // the array at root.prompt
	rPromptIDs      // an array inside rPrompt
	rMessages       // the array at root.messages
	rMessage        // an object inside rMessages
	rContent        // the array at message.content
	rPart           // an object inside rContent
)

// field is the key of the value being read, in the containers that matter.
type field uint8

const (
	fOther field = iota
	fPrompt
	fMessages
	fMaxTokens
	fMaxCompletion
	fStream
	fContent
	fText
)

// maxRoles bounds the path kept: rPart, the deepest role, is at depth 5.
const maxRoles = 8

// promptHandler turns the lexer's tokens into an Estimate. Each total is
// reset when its key appears again, so a repeated key counts once, the
// last, as encoding/json decodes it.
type promptHandler struct {
	roles [maxRoles]role
	depth int
	field field

	promptSeen, textSeen bool
	promptTokens         int // text and ids of the prompt
	msgsSeen             bool
	chatTokens           int // finished messages
	msgBytes             int // text of the message being read
	partBytes            int // text of the part being read

	maxTokens, maxCompletion int
	stream                   bool
}

func (h *promptHandler) top() role {
	if h.depth == 0 || h.depth > maxRoles {
		return rOther
	}
	return h.roles[h.depth-1]
}

func (h *promptHandler) open(object bool) {
	r := rOther
	switch parent := h.top(); {
	case h.depth == 0 && object:
		r = rRoot
	case parent == rRoot && !object && h.field == fPrompt:
		r, h.promptSeen = rPrompt, true
	case parent == rRoot && !object && h.field == fMessages:
		r, h.msgsSeen = rMessages, true
	case parent == rPrompt && !object:
		r = rPromptIDs
	case parent == rMessages && object:
		r, h.msgBytes = rMessage, 0
	case parent == rMessage && !object && h.field == fContent:
		r = rContent
	case parent == rContent && object:
		r, h.partBytes = rPart, 0
	}
	if h.depth < maxRoles {
		h.roles[h.depth] = r
	}
	h.depth++
}

func (h *promptHandler) close() {
	h.closeRole(h.top())
	h.depth--
}

func (h *promptHandler) closeRole(r role) {
	switch r {
	case rMessage:
		h.chatTokens += ChatMessageOverhead + TextTokens(h.msgBytes)
	case rPart:
		h.msgBytes += h.partBytes
	}
}

func (h *promptHandler) key(name []byte, whole bool) {
	h.field = fOther
	if !whole {
		return
	}
	switch h.top() {
	case rRoot:
		switch string(name) {
		case "prompt":
			h.field, h.promptSeen, h.textSeen, h.promptTokens = fPrompt, false, false, 0
		case "messages":
			h.field, h.msgsSeen, h.chatTokens = fMessages, false, 0
		case "max_tokens":
			h.field, h.maxTokens = fMaxTokens, 0
		case "max_completion_tokens":
			h.field, h.maxCompletion = fMaxCompletion, 0
		case "stream":
			h.field, h.stream = fStream, false
		}
	case rMessage:
		if string(name) == "content" {
			h.field, h.msgBytes = fContent, 0
		}
	case rPart:
		if string(name) == "text" {
			h.field, h.partBytes = fText, 0
		}
	}
}

func (h *promptHandler) str(n int, _ []byte, _ bool) {
	switch top := h.top(); {
	case top == rRoot && h.field == fPrompt:
		h.promptSeen = true
		fallthrough
	case top == rPrompt:
		h.textSeen = true
		h.promptTokens += TextTokens(n)
	case top == rMessage && h.field == fContent:
		h.msgBytes += n
	case top == rPart && h.field == fText:
		h.partBytes += n
	}
}

func (h *promptHandler) num(v int64, isInt bool) {
	switch top := h.top(); {
	case top == rPrompt || top == rPromptIDs:
		h.promptTokens++
	case top == rRoot && isInt && v > 0 && v <= math.MaxInt32:
		switch h.field {
		case fMaxTokens:
			h.maxTokens = int(v)
		case fMaxCompletion:
			h.maxCompletion = int(v)
		}
	}
}

func (h *promptHandler) lit(c byte) {
	if h.top() == rRoot && h.field == fStream {
		h.stream = c == 't'
	}
}

// cut counts what the containers still open hold, for a body cut at the
// limit: the string (n decoded bytes) or number in progress, and the parts
// and messages around it.
func (h *promptHandler) cut(inString bool, n int, inNumber bool) {
	switch {
	case inString:
		h.str(n, nil, false)
	case inNumber:
		h.num(0, false)
	}
	for d := min(h.depth, maxRoles); d > 0; d-- {
		h.closeRole(h.roles[d-1])
	}
}

func (h *promptHandler) estimate() Estimate {
	e := Estimate{
		PromptTokens: h.promptTokens + h.chatTokens,
		Known:        h.promptSeen || h.msgsSeen,
		MaxTokens:    h.maxCompletion,
		Stream:       h.stream,
	}
	e.Exact = e.Known && !h.textSeen && !h.msgsSeen
	if e.MaxTokens == 0 {
		e.MaxTokens = h.maxTokens
	}
	return e
}
