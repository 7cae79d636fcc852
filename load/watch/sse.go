package watch

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"time"
)

// maxLine bounds one line of a stream, and the data of one event.
const maxLine = 1 << 20

// errTooLong ends a stream whose line, or event data, is over the bound.
var errTooLong = errors.New("line or event data over the bound")

// bom is U+FEFF in UTF-8, which a stream may start with.
var bom = []byte("\xef\xbb\xbf")

// event is one dispatched Server-Sent Event.
type event struct {
	typ  string // the event field; "message" when there was none
	id   string // the last event ID when the event was dispatched
	data []byte // the data fields, joined with "\n"
}

// sseReader parses a Server-Sent Events stream as the HTML standard says
// ("Interpreting an event stream"): lines end with CRLF, LF or CR; a line
// starting with a colon is a comment; a field's value loses one leading
// space; data fields are joined with "\n"; an empty line dispatches the
// event, unless it has no data; the last event ID persists across events;
// retry is taken only when it is all digits; other fields are ignored; an
// event cut off by the end of the stream is discarded.
//
// Unlike a browser it bounds what it holds: a line longer than max bytes,
// or an event whose data would exceed max bytes, is errTooLong, and the
// stream is dead from then on.
type sseReader struct {
	sc     *bufio.Scanner
	max    int
	start  bool  // no line read yet, so a BOM may come
	err    error // sticky: the stream is dead
	lastID string
	retry  time.Duration // the last valid retry field; 0 when none

	// The event being built.
	typ  string
	data []byte // each data field followed by "\n"
}

func newSSEReader(r io.Reader, max int) *sseReader {
	p := &sseReader{max: max, start: true}
	p.sc = bufio.NewScanner(r)
	// Room for a line of max bytes and its CRLF; split reports a longer
	// line before the Scanner's own limit is reached.
	p.sc.Buffer(make([]byte, 0, min(4096, max+2)), max+2)
	p.sc.Split(p.split)
	return p
}

// next returns the next event, io.EOF at the end of the stream, or the
// error that ended it.
func (p *sseReader) next() (event, error) {
	for p.err == nil && p.sc.Scan() {
		line := p.sc.Bytes()
		if p.start {
			p.start = false
			line = bytes.TrimPrefix(line, bom)
		}
		if len(line) == 0 {
			if ev, ok := p.dispatch(); ok {
				return ev, nil
			}
			continue
		}
		p.err = p.field(line)
	}
	if p.err == nil {
		switch err := p.sc.Err(); {
		case errors.Is(err, bufio.ErrTooLong):
			p.err = errTooLong
		case err != nil:
			p.err = err
		default:
			p.err = io.EOF
		}
	}
	return event{}, p.err
}

// split is the bufio.SplitFunc of one line, its CRLF, LF or CR dropped.
// Bytes after the last line end are never a line: the stream ended in the
// middle of an event, which is discarded.
func (p *sseReader) split(data []byte, atEOF bool) (advance int, token []byte, err error) {
	i := bytes.IndexAny(data, "\r\n")
	switch {
	case i < 0 && len(data) > p.max, i > p.max:
		return 0, nil, errTooLong
	case i < 0:
		return 0, nil, nil // more data, or the end
	case data[i] == '\n':
		return i + 1, data[:i], nil
	case i+1 < len(data):
		if data[i+1] == '\n' {
			return i + 2, data[:i], nil
		}
		return i + 1, data[:i], nil
	case atEOF:
		return i + 1, data[:i], nil
	}
	return 0, nil, nil // a CR last: an LF may follow
}

// field applies one non-empty line.
func (p *sseReader) field(line []byte) error {
	name, value, found := bytes.Cut(line, []byte{':'})
	if found {
		if len(name) == 0 {
			return nil // a comment
		}
		value = bytes.TrimPrefix(value, []byte{' '})
	}
	switch string(name) {
	case "event":
		p.typ = string(value)
	case "data":
		if len(p.data)+len(value) > p.max {
			return errTooLong
		}
		p.data = append(append(p.data, value...), '\n')
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			p.lastID = string(value)
		}
	case "retry":
		if d, ok := parseRetry(value); ok {
			p.retry = d
		}
	}
	return nil
}

// dispatch ends the event being built; ok is false when it had no data.
func (p *sseReader) dispatch() (ev event, ok bool) {
	typ, data := p.typ, p.data
	p.typ, p.data = "", nil
	if len(data) == 0 {
		return event{}, false
	}
	if typ == "" {
		typ = "message"
	}
	return event{typ: typ, id: p.lastID, data: data[:len(data)-1]}, true
}

// parseRetry reads a retry field: milliseconds, ASCII digits only. A value
// too large for a Duration saturates.
func parseRetry(v []byte) (time.Duration, bool) {
	if len(v) == 0 {
		return 0, false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	ms, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || ms > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64), true
	}
	return time.Duration(ms) * time.Millisecond, true
}
