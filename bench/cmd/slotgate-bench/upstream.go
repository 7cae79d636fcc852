package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// upstream is a tiny, fast stand-in for an inference engine, served from
// the driver's own process on 127.0.0.1. Its paths:
//
//	/fast          a tiny JSON answer at once
//	/work?ms=D     a tiny JSON answer after D ms of service
//	/sse           16 SSE chunks 10 ms apart
//	/health        200, uncounted
//
// It counts the requests it received and the most it held at once (counted
// on arrival, before any slot wait). With slots > 0 a request waits for one
// of that many slots before its service starts, as an engine queues work
// beyond its batch.
type upstream struct {
	srv      *http.Server
	addr     string
	slots    atomic.Pointer[chan struct{}]
	received atomic.Int64
	inflight atomic.Int64
	maxIn    atomic.Int64
}

var fastBody = []byte(`{"id":"x","choices":[{"text":"ok"}]}` + "\n")

func startUpstream() (*upstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("upstream listen: %w", err)
	}
	u := &upstream{addr: ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/", u.serve)
	u.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go u.srv.Serve(ln) //nolint:errcheck // ends with Close
	return u, nil
}

// reset sets the slot count (0: unlimited) and zeroes the counters.
func (u *upstream) reset(slots int) {
	var ch chan struct{}
	if slots > 0 {
		ch = make(chan struct{}, slots)
	}
	u.slots.Store(&ch)
	u.received.Store(0)
	u.maxIn.Store(0)
}

func (u *upstream) close() { u.srv.Close() }

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/fast", "/work", "/sse":
	default:
		http.NotFound(w, r)
		return
	}
	io.Copy(io.Discard, r.Body) //nolint:errcheck // the body is not used
	u.received.Add(1)
	n := u.inflight.Add(1)
	defer u.inflight.Add(-1)
	for m := u.maxIn.Load(); n > m && !u.maxIn.CompareAndSwap(m, n); m = u.maxIn.Load() {
	}
	if p := u.slots.Load(); p != nil && *p != nil {
		select {
		case *p <- struct{}{}:
			defer func() { <-*p }()
		case <-r.Context().Done():
			return
		}
	}
	switch r.URL.Path {
	case "/fast":
	case "/work":
		d, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		if !sleep(r.Context(), time.Duration(d)*time.Millisecond) {
			return
		}
	case "/sse":
		u.sse(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(fastBody) //nolint:errcheck // the client may have left
}

func (u *upstream) sse(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	for i := range 16 {
		if i > 0 && !sleep(r.Context(), 10*time.Millisecond) {
			return
		}
		fmt.Fprintf(w, "data: {\"i\":%d}\n\n", i)
		if rc.Flush() != nil {
			return
		}
	}
	io.WriteString(w, "data: [DONE]\n\n") //nolint:errcheck // the client may have left
}

// sleep waits d or until ctx ends, and says whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
