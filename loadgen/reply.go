package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"time"
)

// maxLine bounds one SSE line, and maxBody a whole non-streamed body.
const (
	maxLine = 4 << 20
	maxBody = 64 << 20
)

// usage is the OpenAI usage object.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// choice covers both shapes: text for completions, delta (streamed) or
// message (whole) for chat. Reasoning models stream their reasoning before
// the content; it counts as output too.
type choice struct {
	Text    string `json:"text"`
	Delta   *delta `json:"delta"`
	Message *delta `json:"message"`
}

type delta struct {
	Content          string `json:"content"`
	ReasoningContent string `json:"reasoning_content"`
	Reasoning        string `json:"reasoning"`
}

func (d *delta) hasText() bool {
	return d != nil && (d.Content != "" || d.ReasoningContent != "" || d.Reasoning != "")
}

// chunk is one streamed event or one whole response.
type chunk struct {
	Object  string          `json:"object"`
	Choices []choice        `json:"choices"`
	Usage   *usage          `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

func (c *chunk) hasText() bool {
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Text != "" || ch.Delta.hasText() || ch.Message.hasText() {
			return true
		}
	}
	return false
}

func (c *chunk) isError() bool {
	return c.Object == "error" || (len(c.Error) > 0 && string(c.Error) != "null")
}

// Reply records an answer's content as it arrives: a Sender calls Content
// for each message that carries output (a chunk with text, a message with
// token ids), Usage with the token counts the server reported, and End
// when the answer ended. The zero Reply is empty and ready to use.
type Reply struct {
	first   time.Time       // the first message with output; zero if none
	last    time.Time       // the last message with output so far
	end     time.Time       // the end of the answer
	gaps    []time.Duration // between consecutive messages with output
	content int             // messages with output
	usage   *usage          // the last usage seen
}

// Content records a message with output that arrived at t: the first one
// gives the time to first token, each later one an inter-token gap.
func (r *Reply) Content(t time.Time) {
	if r.content == 0 {
		r.first = t
	} else {
		r.gaps = append(r.gaps, t.Sub(r.last))
	}
	r.last = t
	r.content++
}

// Usage records the prompt and output tokens the server reported; the
// last call wins. Without one, the output tokens are the messages with
// output, and the prompt tokens 0.
func (r *Reply) Usage(promptTokens, outputTokens int) {
	r.usage = &usage{PromptTokens: promptTokens, CompletionTokens: outputTokens}
}

// End records when the answer ended, which ends its end-to-end latency.
// Without it, a complete answer ends when Send returned it.
func (r *Reply) End(t time.Time) { r.end = t }

// readReply reads resp's body as a Server-Sent Events stream when its
// Content-Type says so, and as one JSON response otherwise. now is the
// clock. A read failure is returned wrapped; an error event wraps
// ErrStreamError and unparsable JSON ErrBadResponse.
func readReply(contentType string, body io.Reader, now func() time.Time) (Reply, error) {
	if mt, _, _ := mime.ParseMediaType(contentType); mt == "text/event-stream" {
		return readStream(body, now)
	}
	return readWhole(body, now)
}

// readStream reads OpenAI's stream: one JSON chunk per "data:" line, up to
// "data: [DONE]" or the end of the body. Other lines (blank, comments,
// event:, id:) are skipped. Each chunk is timed when its line is read.
func readStream(body io.Reader, now func() time.Time) (Reply, error) {
	var r Reply
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 16<<10), maxLine)
	for sc.Scan() {
		t := now()
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			r.End(t)
			return r, nil
		}
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			return r, fmt.Errorf("%w: data line: %w", ErrBadResponse, err)
		}
		if err := r.add(&c, t); err != nil {
			return r, err
		}
	}
	if err := sc.Err(); err != nil {
		return r, fmt.Errorf("read stream: %w", err)
	}
	r.End(now())
	return r, nil
}

// readWhole reads a non-streamed response; all its content arrives at once.
func readWhole(body io.Reader, now func() time.Time) (Reply, error) {
	b, err := io.ReadAll(io.LimitReader(body, maxBody))
	if err != nil {
		return Reply{}, fmt.Errorf("read body: %w", err)
	}
	t := now()
	var c chunk
	if err := json.Unmarshal(b, &c); err != nil {
		return Reply{}, fmt.Errorf("%w: body: %w", ErrBadResponse, err)
	}
	var r Reply
	if err := r.add(&c, t); err != nil {
		return r, err
	}
	r.End(t)
	return r, nil
}

// add records chunk c, read at t.
func (r *Reply) add(c *chunk, t time.Time) error {
	if c.isError() {
		return fmt.Errorf("%w: %s", ErrStreamError, c.Error)
	}
	if c.Usage != nil {
		r.usage = c.Usage
	}
	if c.hasText() {
		r.Content(t)
	}
	return nil
}

// outputTokens is the usage's completion tokens, or the number of chunks
// with text when the answer had no usage.
func (r *Reply) outputTokens() int {
	if r.usage != nil {
		return r.usage.CompletionTokens
	}
	return r.content
}

func (r *Reply) promptTokens() int {
	if r.usage != nil {
		return r.usage.PromptTokens
	}
	return 0
}
