package estimate

import "bytes"

// MaxEventBytes is the most data one server-sent event may carry for
// StreamCounter to read it; a longer event is skipped. Events are parsed
// as they arrive, never buffered, so this bounds work, not memory.
const MaxEventBytes = 1 << 20

// Counts is what a response has said so far about the tokens generated.
type Counts struct {
	// Generated is the completion tokens so far: one per streamed choice
	// with non-empty text, replaced by usage.completion_tokens whenever an
	// event carries it. For a whole (non-streamed) JSON response it is
	// usage.completion_tokens, else TextTokens of the text.
	Generated int
	// Exact reports that Generated is the engine's usage figure, with no
	// event counted since.
	Exact bool
	// PromptTokens is usage.prompt_tokens, 0 until a usage object gave it.
	PromptTokens int
	// FirstToken reports that generated text, or usage counting any, has
	// arrived: the request's prefill is over.
	FirstToken bool
	// Done reports data: [DONE], or the end of a whole JSON response.
	Done bool
	// Error reports an error object, in an event or as the response.
	Error bool
}

// Line states of the event-stream parser.
const (
	sseLineStart  uint8 = iota // at the start of a line
	sseField                   // reading a field name
	sseValueStart              // after "data:": one space is skipped
	sseData                    // reading a data value
	sseIgnore                  // in a comment or another field, to the end of the line
)

// Response framings, decided by the first byte that is not whitespace.
const (
	modeDetect uint8 = iota
	modeSSE
	modeJSON
)

// StreamCounter counts the tokens of an OpenAI response written to it in
// pieces of any size: a text/event-stream of chunks, or one JSON object.
//
// Engines (vLLM, SGLang, TensorRT-LLM) stream one token per chunk unless
// speculative decoding or stream intervals put several in one, so counting
// chunks can undercount; a usage object (stream_options.include_usage, or
// continuous_usage_stats for every chunk) makes the count exact.
//
// A StreamCounter is not safe for concurrent use: read Counts from the
// goroutine that writes.
type StreamCounter struct {
	mode   uint8
	line   uint8
	lastCR bool
	name   [8]byte // the field name being read
	nameN  int

	// The event in progress.
	lex      lexer
	h        responseHandler
	hasData  bool
	evBytes  int
	skip     bool
	prefix   [6]byte // the first bytes of its data, to spot [DONE]
	prefixN  int
	finished bool // a whole JSON response was counted

	counts Counts
}

// NewStreamCounter returns a counter for one response.
func NewStreamCounter() *StreamCounter {
	s := &StreamCounter{}
	s.Reset()
	return s
}

// Reset makes s as NewStreamCounter returns it, keeping the room its
// parser grew, for another response.
func (s *StreamCounter) Reset() {
	stack := s.lex.stack
	*s = StreamCounter{}
	s.lex.stack = stack
	s.resetEvent()
}

// Counts returns the counts so far.
func (s *StreamCounter) Counts() Counts { return s.counts }

// Write reads p. It always returns len(p), nil.
func (s *StreamCounter) Write(p []byte) (int, error) {
	n := len(p)
	if s.mode == modeDetect {
		for len(p) > 0 && isSpace(p[0]) {
			p = p[1:]
		}
		if len(p) == 0 {
			return n, nil
		}
		s.mode = modeSSE
		if p[0] == '{' {
			s.mode = modeJSON
		}
	}
	if s.mode == modeJSON {
		s.writeJSON(p)
		return n, nil
	}
	for len(p) > 0 {
		p = s.sseStep(p)
	}
	return n, nil
}

// Close ends the response: an event left without its blank line is
// counted if its data is complete. It always returns nil.
func (s *StreamCounter) Close() error {
	if s.mode == modeSSE {
		s.dispatch()
	}
	return nil
}

func (s *StreamCounter) writeJSON(p []byte) {
	if s.finished {
		return
	}
	s.lex.write(p)
	if !s.h.complete {
		return // what follows the object, if anything, is ignored
	}
	s.finished = true
	c := &s.counts
	if s.h.usage && s.h.completion >= 0 {
		c.Generated, c.Exact = s.h.completion, true
	} else {
		c.Generated = TextTokens(s.h.textBytes)
	}
	if s.h.promptTokens >= 0 {
		c.PromptTokens = s.h.promptTokens
	}
	c.FirstToken = c.Generated > 0
	c.Done = true
	c.Error = s.h.isError
}

// sseStep reads from the start of p and returns the rest.
func (s *StreamCounter) sseStep(p []byte) []byte {
	c := p[0]
	if s.lastCR {
		s.lastCR = false
		if c == '\n' {
			return p[1:] // the LF of a CRLF
		}
	}
	if c == '\r' || c == '\n' {
		s.endLine()
		s.lastCR = c == '\r'
		return p[1:]
	}
	switch s.line {
	case sseLineStart:
		if c == ':' {
			s.line = sseIgnore
			break
		}
		s.line, s.nameN = sseField, 0
		return p // read it as the name's first byte
	case sseField:
		if c == ':' {
			s.line = sseIgnore
			if s.isData() {
				s.beginData()
				s.line = sseValueStart
			}
			break
		}
		if s.nameN < len(s.name) {
			s.name[s.nameN] = c
		}
		s.nameN++
	case sseValueStart:
		s.line = sseData
		if c != ' ' {
			return p
		}
	case sseData:
		j := lineEnd(p)
		if j == len(p) || !s.wholeLine(p[:j]) {
			s.data(p[:j])
		}
		return p[j:]
	case sseIgnore:
		return p[lineEnd(p):]
	}
	return p[1:]
}

// lineEnd is the index of the first CR or LF in p, len(p) if none: the
// end of the line's bytes in p. bytes.IndexByte scans many bytes at a
// time, where a loop over them took a tenth of the counter's time.
func lineEnd(p []byte) int {
	j := bytes.IndexByte(p, '\n')
	if j < 0 {
		j = len(p)
	}
	if k := bytes.IndexByte(p[:j], '\r'); k >= 0 {
		return k
	}
	return j
}

func (s *StreamCounter) isData() bool {
	return s.nameN == 4 && string(s.name[:4]) == "data"
}

// endLine ends a line; a blank one ends the event.
func (s *StreamCounter) endLine() {
	switch s.line {
	case sseLineStart:
		s.dispatch()
	case sseField:
		if s.isData() { // "data" alone: an empty data line
			s.beginData()
		}
	}
	s.line = sseLineStart
}

// beginData starts a data line; lines after the first are joined by "\n".
func (s *StreamCounter) beginData() {
	if s.hasData {
		s.data([]byte{'\n'})
	}
	s.hasData = true
}

// wholeLine reads line, whose end is in sight, through scanLine when it
// is all the data of its event so far, and reports whether it did; if
// not, nothing changed and data must read it.
func (s *StreamCounter) wholeLine(line []byte) bool {
	if s.evBytes != 0 || s.skip || len(line) > MaxEventBytes {
		return false
	}
	if !scanLine(line, &s.h) {
		s.h.reset() // scanLine may have driven it part of the way
		return false
	}
	s.evBytes = len(line)
	s.prefixN = copy(s.prefix[:], line)
	s.lex.st = lsEnd // as the lexer is after one whole value
	return true
}

func (s *StreamCounter) data(b []byte) {
	s.evBytes += len(b)
	if s.skip || s.evBytes > MaxEventBytes {
		s.skip = true
		return
	}
	if s.prefixN < len(s.prefix) {
		s.prefixN += copy(s.prefix[s.prefixN:], b)
	}
	s.lex.write(b)
}

// dispatch counts the event just ended and starts the next.
func (s *StreamCounter) dispatch() {
	defer s.resetEvent()
	if !s.hasData || s.skip {
		return
	}
	if s.evBytes == len("[DONE]") && string(s.prefix[:]) == "[DONE]" {
		s.counts.Done = true
		return
	}
	if !s.lex.finish() {
		return
	}
	h, c := &s.h, &s.counts
	switch {
	case h.usage && h.completion >= 0:
		c.Generated, c.Exact = h.completion, true
	case h.textChoices > 0:
		c.Generated += h.textChoices
		c.Exact = false
	}
	if h.promptTokens >= 0 {
		c.PromptTokens = h.promptTokens
	}
	if c.Generated > 0 {
		c.FirstToken = true
	}
	c.Error = c.Error || h.isError
}

func (s *StreamCounter) resetEvent() {
	s.h.reset()
	s.lex.reset(&s.h)
	s.hasData, s.evBytes, s.skip, s.prefixN = false, 0, false, 0
}
