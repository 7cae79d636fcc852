package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// engine is a tiny, fast stand-in for an inference engine (enginesim is
// too slow to saturate a proxy). The driver runs it as a child process,
// `slotgate-bench engine`, so that the client, the engine and the proxy are
// three processes: in one process with the client, direct would share a
// Go runtime with the load and look better than it is. Its paths:
//
//	/fast          a tiny JSON answer at once
//	/work?ms=D     a tiny JSON answer after D ms of service
//	/sse           16 SSE chunks 10 ms apart, each flushed
//	/stream?n=E&s=S  E OpenAI chat chunks 10 to 30 ms apart, each flushed and
//	               numbered ("seq"), on stream S's schedule (streamGap)
//	/health        200, uncounted
//	GET /_stats    its counters as JSON (engineStats), uncounted
//	POST /_reset   ?slots=S sets the slot count (0: unlimited) and zeroes the counters
//
// It counts the requests it received and the most it held at once (counted
// on arrival, before any slot wait). With slots > 0 a request waits for one
// of that many slots before its service starts, as an engine queues work
// beyond its batch. It also records how late /stream sent each event
// against its schedule (lateness): /_stats gives the median and the 99th
// percentile.
type engine struct {
	slots    atomic.Pointer[chan struct{}]
	received atomic.Int64
	inflight atomic.Int64
	maxIn    atomic.Int64
	late     lateness // /stream's events, against their schedule
}

// engineStats is what GET /_stats answers.
type engineStats struct {
	Received    int64 `json:"received"`
	MaxInFlight int64 `json:"max_in_flight"`
	InFlight    int64 `json:"in_flight"`
	// How late /stream's events were sent against their schedule, in
	// µs (the upper bound of the 100 µs step that holds the quantile).
	LateP50 int64 `json:"late_p50_us"`
	LateP99 int64 `json:"late_p99_us"`
}

var fastBody = []byte(`{"id":"x","choices":[{"text":"ok"}]}` + "\n")

// engineMain is the `engine` subcommand: it serves on --listen, prints
// "listening ADDR" on stdout for the driver, and runs until SIGTERM.
func engineMain(args []string) error {
	fs := flag.NewFlagSet("engine", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "host:port to serve on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("engine listen: %w", err)
	}
	srv := &http.Server{Handler: newEngine().handler(), ReadHeaderTimeout: 5 * time.Second}
	fmt.Printf("listening %s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func newEngine() *engine {
	u := &engine{}
	u.reset(0)
	return u
}

func (u *engine) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /_stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(engineStats{ //nolint:errcheck // the driver sees a short answer
			Received: u.received.Load(), MaxInFlight: u.maxIn.Load(), InFlight: u.inflight.Load(),
			LateP50: u.late.quantile(0.5).Microseconds(), LateP99: u.late.quantile(0.99).Microseconds(),
		})
	})
	mux.HandleFunc("POST /_reset", func(w http.ResponseWriter, r *http.Request) {
		slots, err := strconv.Atoi(r.URL.Query().Get("slots"))
		if err != nil || slots < 0 {
			http.Error(w, "slots: want a count, 0 for unlimited", http.StatusBadRequest)
			return
		}
		u.reset(slots)
	})
	mux.HandleFunc("/", u.serve)
	return mux
}

// reset sets the slot count (0: unlimited) and zeroes the counters.
func (u *engine) reset(slots int) {
	var ch chan struct{}
	if slots > 0 {
		ch = make(chan struct{}, slots)
	}
	u.slots.Store(&ch)
	u.received.Store(0)
	u.maxIn.Store(0)
	u.late.reset()
}

func (u *engine) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/fast", "/work", "/sse", "/stream":
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
	if ch := *u.slots.Load(); ch != nil {
		select {
		case ch <- struct{}{}:
			defer func() { <-ch }()
		case <-r.Context().Done():
			return
		}
	}
	switch r.URL.Path {
	case "/work":
		d, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		if !sleep(r.Context(), time.Duration(d)*time.Millisecond) {
			return
		}
	case "/sse":
		sse(w, r)
		return
	case "/stream":
		numberedStream(w, r, &u.late)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(fastBody) //nolint:errcheck // the client may have left
}

// sseChunks and sseGap shape the streaming answer: issue 6's 16 chunks
// 10 ms apart.
const (
	sseChunks = 16
	sseGap    = 10 * time.Millisecond
)

func sse(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	for i := range sseChunks {
		if i > 0 && !sleep(r.Context(), sseGap) {
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
