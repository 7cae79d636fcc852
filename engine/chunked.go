package engine

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
)

// chunkedBody is an answer's chunked body (a stream's), read from the
// connection's reader as net/http reads the body of an answer
// http.ReadResponse made: the chunks' data through the standard library's
// chunked reader, then the trailer section, whose fields go to the
// Response's Trailer, then io.EOF. A bad trailer ends the body with its
// error and closes it, as net/http's does (golang.org/issue/12027).
// Closing it reads nothing: answerBody decides the connection's fate.
type chunkedBody struct {
	r      *bufio.Reader
	chunks io.Reader // httputil.NewChunkedReader(r)
	resp   *http.Response
	eof    bool
	closed bool
}

// The errors net/http's body reports for a trailer it cannot read, by
// their text (its own values are not exported).
var (
	errTrailerEOF  = errors.New("http: unexpected EOF reading trailer")
	errLongTrailer = errors.New("http: suspiciously long trailer after chunked body")
)

func (b *chunkedBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.eof {
		return 0, io.EOF
	}
	n, err := b.chunks.Read(p)
	if err == io.EOF {
		b.eof = true
		if terr := b.readTrailer(); terr != nil {
			b.eof, b.closed = false, true
			return n, terr
		}
	}
	return n, err
}

// readTrailer reads what follows the last chunk: an empty line, or
// trailer fields up to one, which go to resp.Trailer.
func (b *chunkedBody) readTrailer() error {
	buf, err := b.r.Peek(2)
	if bytes.Equal(buf, []byte("\r\n")) {
		_, _ = b.r.Discard(2)
		return nil
	}
	if len(buf) < 2 {
		return errTrailerEOF
	}
	if err != nil {
		return err
	}
	// A trailer must end within the reader's buffer, or a stream could
	// send fields without end.
	if !endsInBuffer(b.r) {
		return errLongTrailer
	}
	fields, err := textproto.NewReader(b.r).ReadMIMEHeader()
	if err != nil {
		if err == io.EOF {
			return errTrailerEOF
		}
		return err
	}
	if b.resp.Trailer == nil {
		b.resp.Trailer = http.Header(fields)
		return nil
	}
	for k, v := range fields {
		b.resp.Trailer[k] = v
	}
	return nil
}

// endsInBuffer reports whether an empty line ("\r\n\r\n") comes before
// r's buffer is full, reading more as needed.
func endsInBuffer(r *bufio.Reader) bool {
	for size := 4; ; size++ {
		buf, err := r.Peek(size)
		if bytes.HasSuffix(buf, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

func (b *chunkedBody) Close() error {
	b.closed = true
	return nil
}

// newChunkedBody reads resp's chunked body from r.
func newChunkedBody(r *bufio.Reader, resp *http.Response) chunkedBody {
	return chunkedBody{r: r, chunks: httputil.NewChunkedReader(r), resp: resp}
}
