package engine

import (
	"net/http"
	"sync"
)

// answerParts is what an answer of the hand-written path allocates, in
// one piece, so that a caller done with the answer can give it all back
// for the next one (Client.Recycle): the body's wrappers, and, for the
// common answer parseAnswer reads, the Response, its header map and the
// values' backing array. On the fast path these were half of what a
// request allocated, and the collector's pace followed (BENCHMARKS.md).
type answerParts struct {
	body    answerBody
	length  lengthBody
	chunked chunkedBody
	te      [1]string // the chunked Response's TransferEncoding
	resp    http.Response
	header  http.Header
	values  []string
}

// answerPool keeps the parts of answers given back.
type answerPool struct{ pool sync.Pool }

// take returns parts whose fields are zero, but for the header map and
// the values' array, kept empty for their room.
func (a *answerPool) take() *answerParts {
	if p, ok := a.pool.Get().(*answerParts); ok {
		return p
	}
	return &answerParts{}
}

// give keeps p, reset, for the next take.
func (a *answerPool) give(p *answerParts) {
	p.reset()
	a.pool.Put(p)
}

// reset zeroes p but for the header map's and the values' room.
func (p *answerParts) reset() {
	clear(p.header)
	clear(p.values) // no value of the last answer held past its use
	p.body, p.length, p.chunked, p.resp, p.values = answerBody{}, lengthBody{}, chunkedBody{}, http.Response{}, p.values[:0]
}

// Recycle gives back what the answer resp allocated, for the next answer
// SendRaw reads. The caller must be done with resp: its body closed, and
// nothing of it (its header map, its values, the Response itself) read or
// kept afterwards by anyone. An answer that is not SendRaw's or Do's on
// the hand-written path, or whose body is still open, is left to the
// collector.
func (c *Client) Recycle(resp *http.Response) {
	b, ok := resp.Body.(*answerBody)
	if !ok || b.parts == nil || !b.end {
		return
	}
	c.direct.answers.give(b.parts)
}
