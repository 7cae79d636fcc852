package main

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// The numbered streams of the streams-at-scale scenarios (issue 17): the
// engine stand-in's /stream sends E OpenAI chat chunks, each carrying its
// sequence number first ("seq"), so that the client can tell an event lost
// or reordered on the way from one delivered, and slotgate's token counter
// sees the chunks a real engine sends (text in choices[].delta.content).

// Bounds of the gap between two events of a stream: issue 17's 10–30 ms.
const (
	streamGapMin = 10 * time.Millisecond
	streamGapMax = 30 * time.Millisecond
)

// streamGap is the gap before event i (i ≥ 1) of stream s: between
// streamGapMin and streamGapMax, 20 ms on average over 21 events, and
// shifted from one stream to the next, so that thousands of streams opened
// together do not send their events in lockstep bursts. It depends on s
// and i alone, so every target is sent the same schedule.
func streamGap(s, i int) time.Duration {
	steps := int((streamGapMax - streamGapMin) / time.Millisecond) // 20
	k := (s*31 + i*17) % (steps + 1)
	if k < 0 {
		k += steps + 1
	}
	return streamGapMin + time.Duration(k)*time.Millisecond
}

// streamEvents is how many events a stream of length d carries at the
// mean gap: at least 2, so that it has an inter-token gap.
func streamEvents(d time.Duration) int {
	return max(2, int(d/((streamGapMin+streamGapMax)/2)))
}

// appendEvent appends event seq of a stream, one SSE event.
func appendEvent(b []byte, seq int) []byte {
	b = append(b, `data: {"seq":`...)
	b = strconv.AppendInt(b, int64(seq), 10)
	return append(b, `,"id":"bench","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}`+"\n\n"...)
}

// eventPrefix starts every numbered event's data line.
var eventPrefix = []byte(`data: {"seq":`)

// parseSeq reads the sequence number of a numbered event's data line: ok
// is false for any other line (a blank line, data: [DONE], a comment), or
// a number that does not fit in an int.
func parseSeq(line []byte) (seq int, ok bool) {
	rest, found := bytes.CutPrefix(line, eventPrefix)
	if !found {
		return 0, false
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || n > 9 || n == len(rest) || rest[n] != ',' {
		return 0, false
	}
	v, err := strconv.Atoi(string(rest[:n]))
	return v, err == nil
}

// seqCheck follows one stream's sequence numbers as they arrive.
type seqCheck struct {
	next      int // the number expected next
	received  int // events delivered
	lost      int // numbers skipped over
	reordered int // numbers that came after a later one, or twice
}

// see records event seq.
func (c *seqCheck) see(seq int) {
	c.received++
	switch {
	case seq == c.next:
		c.next++
	case seq > c.next:
		c.lost += seq - c.next
		c.next = seq + 1
	default:
		// Counted once as lost when skipped over, it is counted again as
		// reordered now: a stream must have both at zero.
		c.reordered++
	}
}

// end closes the stream, sent events in all: what never came is lost.
func (c *seqCheck) end(sent int) {
	if sent > c.next {
		c.lost += sent - c.next
		c.next = sent
	}
}

// numberedStream is the engine stand-in's /stream: n events (?n=, 1 to
// 100000) on stream s's schedule (?s=, default 0), each flushed, then
// data: [DONE]. How late each event after the first is sent against its
// gap goes to late.
func numberedStream(w http.ResponseWriter, r *http.Request, late *lateness) {
	q := r.URL.Query()
	n, err := strconv.Atoi(q.Get("n"))
	if err != nil || n < 1 || n > 100000 {
		http.Error(w, fmt.Sprintf("n=%q: want a count of events, 1 to 100000", q.Get("n")), http.StatusBadRequest)
		return
	}
	s, _ := strconv.Atoi(q.Get("s")) // any stream number will do
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	buf := make([]byte, 0, 256)
	for i := range n {
		if i > 0 {
			gap, asleep := streamGap(s, i), time.Now()
			if !sleep(r.Context(), gap) {
				return
			}
			late.record(time.Since(asleep) - gap)
		}
		buf = appendEvent(buf[:0], i)
		if _, err := w.Write(buf); err != nil || rc.Flush() != nil {
			return
		}
	}
	w.Write([]byte("data: [DONE]\n\n")) //nolint:errcheck // the client may have left
}
