package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The streams-at-scale client: one raw TCP connection per stream, one
// request written on it by hand and its answer read through a small
// bufio.Reader, on one goroutine per stream. net/http's client would add
// a writing and a reading goroutine and their buffers per connection,
// which at 4096 streams on two cores is CPU taken from the proxy being
// measured (issue 17: the driver's own share must stay small).

// streamSpec is one run of held streams.
type streamSpec struct {
	addr    string        // host:port of the target
	streams int           // streams opened together and held
	events  int           // events per stream
	body    []byte        // the request body, the same for every stream
	timeout time.Duration // bound on one stream, from its dial to its end
}

// oneStream is what the client saw of one stream.
type oneStream struct {
	ttft time.Duration   // request written to first event read
	gaps []time.Duration // between consecutive events read
	// held is where gaps read once every stream was open begin: before
	// it, the gaps of the burst of streams opening.
	held  int
	check seqCheck
	err   error
}

// dialers is how many streams are being connected at once: enough to
// open thousands in well under a second, few enough not to overflow a
// listen backlog.
const dialers = 64

// runStreams opens spec.streams streams, each on its own connection, and
// reads them to their end. opened is closed when every stream has read its
// first event, or, if some never do, when all have ended. It returns one
// result per stream.
func runStreams(ctx context.Context, spec streamSpec, opened chan<- struct{}) []oneStream {
	out := make([]oneStream, spec.streams)
	var wg sync.WaitGroup
	var first atomic.Int64 // streams that read their first event (or ended without)
	allOpen := func() bool { return first.Load() == int64(spec.streams) }
	var once sync.Once
	signal := func() { once.Do(func() { close(opened) }) }
	slots := make(chan struct{}, dialers)
	for i := range out {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			out[i].err = ctx.Err()
			continue
		}
		wg.Go(func() {
			sawFirst := func() {
				<-slots
				if first.Add(1) == int64(spec.streams) {
					signal()
				}
			}
			out[i] = readNumbered(ctx, spec, i, sawFirst, allOpen)
		})
	}
	wg.Wait()
	signal()
	return out
}

// readNumbered dials, sends stream i's request and reads its events,
// calling sawFirst exactly once: at its first event, or at its end. The
// gaps read while allOpen is false are the burst's (oneStream.held).
func readNumbered(ctx context.Context, spec streamSpec, i int, sawFirst func(), allOpen func() bool) (res oneStream) {
	called := false
	defer func() {
		if !called {
			sawFirst()
		}
		res.check.end(spec.events)
	}()
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", spec.addr)
	if err != nil {
		res.err = fmt.Errorf("dial: %w", err)
		return res
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetDeadline(time.Now().Add(spec.timeout)) //nolint:errcheck // a late read fails
	t0 := time.Now()
	if _, err := conn.Write(streamRequest(spec, i)); err != nil {
		res.err = fmt.Errorf("write: %w", err)
		return res
	}
	br := bufio.NewReaderSize(conn, 1024)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		res.err = fmt.Errorf("answer head: %w", err)
		return res
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		res.err = fmt.Errorf("status %d", resp.StatusCode)
		return res
	}
	res.gaps = make([]time.Duration, 0, max(0, spec.events-1))
	var last time.Time
	res.err = scanEvents(bufio.NewReaderSize(resp.Body, 512), func(seq int) {
		now := time.Now()
		if last.IsZero() {
			res.ttft = now.Sub(t0)
			called = true
			sawFirst()
		} else {
			if res.held == len(res.gaps) && !allOpen() {
				res.held++
			}
			res.gaps = append(res.gaps, now.Sub(last))
		}
		last = now
		res.check.see(seq)
	})
	return res
}

// scanEvents reads SSE lines from br to the end of the stream, calling
// event with the number of each numbered event. It returns nil at
// data: [DONE], and an error for a stream cut before it.
func scanEvents(br *bufio.Reader, event func(seq int)) error {
	for {
		line, err := br.ReadSlice('\n')
		if seq, ok := parseSeq(line); ok {
			event(seq)
		} else if bytes.HasPrefix(line, doneLine) {
			return nil
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			// A line longer than the buffer: not one of ours; read on.
		case errors.Is(err, io.EOF):
			return errors.New("stream ended before data: [DONE]")
		case err != nil:
			return fmt.Errorf("stream cut: %w", err)
		}
	}
}

var doneLine = []byte("data: [DONE]")

// streamRequest is stream i's request, HTTP/1.1 written by hand.
func streamRequest(spec streamSpec, i int) []byte {
	return fmt.Appendf(nil, "POST /stream?n=%d&s=%d HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		spec.events, i, spec.addr, len(spec.body), spec.body)
}

// streamBody is a chat completion request with a prompt of about
// promptBytes bytes (at least "hi"), asking for events tokens.
func streamBody(promptBytes, events int) []byte {
	prompt := "hi"
	if promptBytes > len(prompt) {
		words := strings.Repeat("lorem ipsum dolor sit amet ", promptBytes/27+1)
		prompt = words[:promptBytes]
	}
	return fmt.Appendf(nil, `{"model":"m","stream":true,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, events, prompt)
}
