package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"time"
)

// Sentinels for a 2xx answer that did not complete; the outcome mapper
// branches on them.
var (
	errStreamError = errors.New("stream carried an error event")
	errBadResponse = errors.New("response is not the JSON expected")
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

// reply is what a 2xx body said, with the arrival time of its content.
type reply struct {
	first   time.Time       // the first chunk with text; zero if none
	last    time.Time       // the last chunk with text so far
	end     time.Time       // [DONE], or the end of the body
	gaps    []time.Duration // between consecutive chunks with text
	content int             // chunks with text
	usage   *usage          // the last usage seen
}

// readReply reads resp's body as a Server-Sent Events stream when its
// Content-Type says so, and as one JSON response otherwise. now is the
// clock. A read failure is returned wrapped; an error event wraps
// errStreamError and unparsable JSON errBadResponse.
func readReply(contentType string, body io.Reader, now func() time.Time) (reply, error) {
	if mt, _, _ := mime.ParseMediaType(contentType); mt == "text/event-stream" {
		return readStream(body, now)
	}
	return readWhole(body, now)
}

// readStream reads OpenAI's stream: one JSON chunk per "data:" line, up to
// "data: [DONE]" or the end of the body. Other lines (blank, comments,
// event:, id:) are skipped. Each chunk is timed when its line is read.
func readStream(body io.Reader, now func() time.Time) (reply, error) {
	var r reply
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
			r.end = t
			return r, nil
		}
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			return r, fmt.Errorf("%w: data line: %w", errBadResponse, err)
		}
		if err := r.add(&c, t); err != nil {
			return r, err
		}
	}
	if err := sc.Err(); err != nil {
		return r, fmt.Errorf("read stream: %w", err)
	}
	r.end = now()
	return r, nil
}

// readWhole reads a non-streamed response; all its content arrives at once.
func readWhole(body io.Reader, now func() time.Time) (reply, error) {
	b, err := io.ReadAll(io.LimitReader(body, maxBody))
	if err != nil {
		return reply{}, fmt.Errorf("read body: %w", err)
	}
	t := now()
	var c chunk
	if err := json.Unmarshal(b, &c); err != nil {
		return reply{}, fmt.Errorf("%w: body: %w", errBadResponse, err)
	}
	var r reply
	if err := r.add(&c, t); err != nil {
		return r, err
	}
	r.end = t
	return r, nil
}

// add records chunk c, read at t.
func (r *reply) add(c *chunk, t time.Time) error {
	if c.isError() {
		return fmt.Errorf("%w: %s", errStreamError, c.Error)
	}
	if c.Usage != nil {
		r.usage = c.Usage
	}
	if !c.hasText() {
		return nil
	}
	if r.content == 0 {
		r.first = t
	} else {
		r.gaps = append(r.gaps, t.Sub(r.last))
	}
	r.last = t
	r.content++
	return nil
}

// outputTokens is the usage's completion tokens, or the number of chunks
// with text when the answer had no usage.
func (r *reply) outputTokens() int {
	if r.usage != nil {
		return r.usage.CompletionTokens
	}
	return r.content
}

func (r *reply) promptTokens() int {
	if r.usage != nil {
		return r.usage.PromptTokens
	}
	return 0
}
