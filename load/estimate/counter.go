package estimate

// PromptCounter estimates the prompt of an OpenAI request body written to
// it in pieces of any size. It keeps a few hundred bytes of state whatever
// the body's size, and stops parsing after limit bytes.
//
// A PromptCounter is not safe for concurrent use; PromptReader is.
type PromptCounter struct {
	lex     lexer
	h       promptHandler
	limit   int64
	n       int64
	partial bool
	closed  bool
	valid   bool
}

// NewPromptCounter returns a counter that parses the first limit bytes of
// a body; limit <= 0 means no limit.
func NewPromptCounter(limit int64) *PromptCounter {
	c := &PromptCounter{}
	c.Reset(limit)
	return c
}

// Reset makes c as NewPromptCounter(limit) returns it, keeping the room
// its parser grew: a caller that estimates body after body may reuse one
// counter rather than allocate a few hundred bytes for each.
func (c *PromptCounter) Reset(limit int64) {
	stack := c.lex.stack
	*c = PromptCounter{limit: limit}
	c.lex.stack = stack
	c.lex.reset(&c.h)
}

// Write parses p. It always returns len(p), nil: a malformed or oversized
// body only makes the estimate unknown. Writes after Close are ignored.
func (c *PromptCounter) Write(p []byte) (int, error) {
	n := len(p)
	if c.closed || c.partial {
		return n, nil
	}
	if c.limit > 0 && int64(len(p)) > c.limit-c.n {
		p = p[:c.limit-c.n]
		c.partial = true
	}
	c.n += int64(len(p))
	c.lex.write(p)
	return n, nil
}

// Close marks the end of the body; the Estimate is final from then on.
// It always returns nil.
func (c *PromptCounter) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	if c.partial {
		if c.lex.st != lsError {
			st := c.lex.st
			inString := !c.lex.isKey && (st == lsString || st == lsEscape || st == lsHex)
			c.h.cut(inString, c.lex.strLen, st == lsNumber)
		}
		return nil
	}
	c.valid = c.lex.finish()
	return nil
}

// Estimate is the estimate of the body, final after Close. Before Close it
// is the zero Estimate (with Partial set once the limit was passed). After
// Close it is Known for a whole, well-formed body within the limit; a
// partial body gives the lower bound its well-formed prefix held.
func (c *PromptCounter) Estimate() Estimate {
	switch {
	case c.valid:
		return c.h.estimate()
	case c.closed && c.partial && c.lex.st != lsError:
		e := c.h.estimate()
		e.Known, e.Exact, e.Partial = false, false, true
		return e
	}
	return Estimate{Partial: c.partial}
}
