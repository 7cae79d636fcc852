package estimate

import (
	"io"
	"sync"
)

// PromptReader passes a request body through unchanged while a
// PromptCounter estimates it. Each Read reads only what its caller asked
// for from the underlying reader, so the estimate never delays the body.
//
// Read and Close may be called from different goroutines, as
// net/http.Transport does with a request body; Estimate and Done from any.
type PromptReader struct {
	r    io.Reader
	mu   sync.Mutex
	c    *PromptCounter
	done chan struct{}
	end  bool
}

// NewPromptReader returns a reader of r that estimates the first limit
// bytes of what passes through it (limit <= 0: all of it).
func NewPromptReader(r io.Reader, limit int64) *PromptReader {
	return &PromptReader{r: r, c: NewPromptCounter(limit), done: make(chan struct{})}
}

// Read reads from the underlying reader and returns its bytes and error
// unchanged. Any error, io.EOF or another, ends the estimate: it is Known
// when the bytes read by then were a whole, well-formed body.
func (p *PromptReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n < 0 || n > len(b) {
		return n, err // a broken reader: pass its answer on, read nothing
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.end {
		return n, err
	}
	p.c.Write(b[:n])
	if err != nil {
		p.finish()
	}
	return n, err
}

// Close ends the estimate, if no error did before, with the bytes read so
// far, and closes the underlying reader if it is an io.Closer, returning
// its error.
func (p *PromptReader) Close() error {
	p.mu.Lock()
	if !p.end {
		p.finish()
	}
	p.mu.Unlock()
	if c, ok := p.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (p *PromptReader) finish() {
	p.end = true
	p.c.Close()
	close(p.done)
}

// Estimate returns the estimate and true once the body ended (io.EOF, an
// error or Close); before that the zero Estimate and false.
func (p *PromptReader) Estimate() (Estimate, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.end {
		return Estimate{}, false
	}
	return p.c.Estimate(), true
}

// Done is closed when the body ends.
func (p *PromptReader) Done() <-chan struct{} { return p.done }
