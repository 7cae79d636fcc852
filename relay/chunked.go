package relay

import (
	"errors"
	"fmt"
)

// errChunked is an engine answer whose chunked framing is broken.
var errChunked = errors.New("relay: malformed chunked body")

// maxChunkLine bounds a chunk-size line or a trailer line.
const maxChunkLine = 4096

// chunkState is where a chunked body's framing stands.
type chunkState uint8

const (
	csSize      chunkState = iota // in a chunk-size line, before any extension
	csExt                         // in a chunk extension, up to the line's end
	csSizeWS                      // in whitespace after a chunk size
	csSizeLF                      // after the size line's CR
	csData                        // in a chunk's data
	csDataCR                      // expecting the CR after a chunk's data
	csDataLF                      // expecting its LF
	csTrailer                     // at the start of a trailer line (or the last empty line)
	csTrailerIn                   // inside a trailer line
	csTrailerLF                   // after a trailer line's CR
	csEndLF                       // after the final empty line's CR
	csDone                        // the body ended
)

// chunkParser follows the framing of a chunked body (RFC 9112 section 7.1)
// as its bytes pass, and hands the chunks' data to data. It is strict: a
// line must end in CRLF, a size must be hex and fit in 60 bits, an
// extension follow it at once after ";"; whitespace may end a size line
// with no extension, as net/http's reader allows. Extensions and trailers
// are skipped (and passed on as they came).
type chunkParser struct {
	st       chunkState
	left     int64 // data bytes left in the current chunk
	digits   int   // hex digits of the current size
	lineLen  int   // bytes of the current size or trailer line
	consumed int64 // bytes of the body framed so far
}

// done reports whether the body's last byte passed.
func (c *chunkParser) done() bool { return c.st == csDone }

// feed frames p, calling data with each run of chunk data in it. It
// returns how many bytes of p belong to the body: fewer than len(p) only
// when the body ended inside p (the rest is beyond the answer).
func (c *chunkParser) feed(p []byte, data func([]byte)) (int, error) {
	i := 0
	for i < len(p) && c.st != csDone {
		if c.st == csData {
			n := int(min(c.left, int64(len(p)-i)))
			data(p[i : i+n])
			i += n
			c.left -= int64(n)
			if c.left == 0 {
				c.st = csDataCR
			}
			continue
		}
		if err := c.step(p[i]); err != nil {
			return i, fmt.Errorf("%w at byte %d", err, c.consumed+int64(i))
		}
		i++
	}
	c.consumed += int64(i)
	return i, nil
}

// step takes one framing byte (anything but chunk data).
func (c *chunkParser) step(b byte) error {
	switch c.st {
	case csSize:
		return c.sizeByte(b)
	case csExt:
		return c.lineByte(b, csSizeLF)
	case csSizeWS:
		return c.sizeSpace(b)
	case csSizeLF:
		return c.sizeEnd(b)
	case csDataCR:
		return c.expect(b, '\r', csDataLF)
	case csDataLF:
		return c.expect(b, '\n', csSize)
	case csTrailer:
		if b == '\r' {
			c.st = csEndLF
			return nil
		}
		c.st, c.lineLen = csTrailerIn, 0
		return c.lineByte(b, csTrailerLF)
	case csTrailerIn:
		return c.lineByte(b, csTrailerLF)
	case csTrailerLF:
		return c.expect(b, '\n', csTrailer)
	case csEndLF:
		return c.expect(b, '\n', csDone)
	}
	return errChunked
}

// sizeByte takes a byte of the chunk-size line.
func (c *chunkParser) sizeByte(b byte) error {
	v, hex := hexVal(b)
	switch {
	case hex && c.digits < 15:
		c.left = c.left<<4 | int64(v)
		c.digits++
		return nil
	case hex:
		return fmt.Errorf("%w: chunk size too large", errChunked)
	case c.digits == 0:
		return fmt.Errorf("%w: chunk size expected", errChunked)
	case b == ';':
		c.st, c.lineLen = csExt, c.digits
		return nil
	case b == '\r':
		c.st = csSizeLF
		return nil
	case b == ' ' || b == '\t':
		c.st, c.lineLen = csSizeWS, c.digits
		return nil
	}
	return fmt.Errorf("%w: byte %q in a chunk size", errChunked, b)
}

// sizeSpace takes a byte after a size's trailing whitespace: more of it,
// or the line's end (as net/http's reader takes "5 \r\n").
func (c *chunkParser) sizeSpace(b byte) error {
	switch b {
	case ' ', '\t':
		return c.lineByte(b, csSizeLF)
	case '\r':
		c.st = csSizeLF
		return nil
	}
	return fmt.Errorf("%w: byte %q after a chunk size's whitespace", errChunked, b)
}

// sizeEnd takes the LF that ends a chunk-size line.
func (c *chunkParser) sizeEnd(b byte) error {
	if b != '\n' {
		return fmt.Errorf("%w: CRLF expected after a chunk size", errChunked)
	}
	c.digits = 0
	if c.left == 0 {
		c.st = csTrailer
	} else {
		c.st = csData
	}
	return nil
}

// lineByte takes a byte of a line whose content is skipped (an extension,
// a trailer), moving to next at its CR.
func (c *chunkParser) lineByte(b byte, next chunkState) error {
	switch {
	case b == '\r':
		c.st = next
	case b == '\n':
		return fmt.Errorf("%w: bare LF", errChunked)
	default:
		c.lineLen++
		if c.lineLen > maxChunkLine {
			return fmt.Errorf("%w: line longer than %d bytes", errChunked, maxChunkLine)
		}
	}
	return nil
}

func (c *chunkParser) expect(b, want byte, next chunkState) error {
	if b != want {
		return fmt.Errorf("%w: %q expected, got %q", errChunked, want, b)
	}
	c.st = next
	return nil
}

func hexVal(b byte) (byte, bool) {
	switch {
	case '0' <= b && b <= '9':
		return b - '0', true
	case 'a' <= b && b <= 'f':
		return b - 'a' + 10, true
	case 'A' <= b && b <= 'F':
		return b - 'A' + 10, true
	}
	return 0, false
}
