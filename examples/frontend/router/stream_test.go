package router_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotgate/slotgate/examples/frontend/router"
)

// A stream passes event by event: the worker sends its second event only
// once the client has read the first, which it can only if the router
// flushed it. Without the flush the read waits until the request's
// deadline, ten seconds of the bubble's clock, and the test fails.
func TestStreamFlushedPerEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		w := startWorker(t, n, "a", load{}, time.Second)
		read := make(chan struct{})
		n.serve(t, "sse:80", http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
			rw.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(rw, "data: one\n\n")
			rw.(http.Flusher).Flush()
			<-read
			fmt.Fprint(rw, "data: two\n\n")
		}))
		wk := w.worker()
		wk.Proxy = "http://sse:80"
		f := startFleet(t, n, router.Options{Workers: []router.Worker{wk}})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://frontend:80/v1/completions", nil)
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		if line, err := br.ReadString('\n'); err != nil || line != "data: one\n" {
			t.Fatalf("first line %q, %v", line, err)
		}
		close(read)
		rest, _ := br.ReadString(0)
		if !strings.Contains(rest, "data: two") {
			t.Errorf("rest %q, want the second event", rest)
		}
	})
}

// Run owns its goroutines: it returns nil once its context ends, leaving
// none behind (synctest fails a test whose bubble keeps a goroutine), and
// a second Run is refused.
func TestRunEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		w := startWorker(t, n, "a", load{}, time.Second)
		client := n.client(t)
		r, err := router.New(router.Options{Workers: []router.Worker{w.worker()}, Client: client,
			Watch: watchClient(client)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		synctest.Wait()
		if err := r.Run(ctx); err == nil {
			t.Error("a second Run returned nil, want an error")
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
