package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/load/inflight"
	"github.com/slotgate/slotgate/proxy"
)

// BenchmarkStreamEvents measures the stream path per server-sent event:
// one chat answer of streamEvents token events, each written and flushed
// on its own by the engine, as vLLM streams a token a chunk, read by a
// client over loopback. It reports ns/event (wall), cpu-ns/event (the
// whole process's CPU: engine, proxy and client), B/event and
// allocs/event.
//
//   - direct: the client reads the engine itself, the baseline that the
//     proxied cases add to;
//   - counted: through the proxy as cmd/slotgate runs it, each event's
//     tokens counted for the load report and the waiting limit;
//   - uncounted: through the proxy on a passthrough path, which takes no
//     slot and counts nothing, so that counted over uncounted is the
//     share of the token counting;
//   - relayed: as counted, with the answer carried by the stream relay's
//     event loop (--stream-relay epoll, the default on Linux) instead of
//     the handler's goroutine.
//
// paced holds each event back until the client has read the one before,
// as an engine that streams a token every 10 ms does: one event per read
// and per write. burst writes them as fast as the engine can, so reads
// may find several at once.
func BenchmarkStreamEvents(b *testing.B) {
	for _, mode := range []struct {
		name  string
		paced bool
	}{{"paced", true}, {"burst", false}} {
		for _, via := range []string{"direct", "counted", "uncounted", "relayed"} {
			b.Run(via+"/"+mode.name, func(b *testing.B) {
				eng := newSSEBenchEngine(b, mode.paced)
				target := eng.url
				switch via {
				case "counted", "uncounted":
					target = streamProxy(b, eng.url, via == "uncounted", false)
				case "relayed":
					target = streamProxy(b, eng.url, false, true)
				}
				runStream(b, target.JoinPath(streamPath).String(), eng)
			})
		}
	}
}

const (
	streamPath   = "/v1/chat/completions"
	streamEvents = 256
	// streamEvent is one token event as vLLM (and enginesim) sends it.
	streamEvent = `data: {"id":"chatcmpl-9b1f0c2d","object":"chat.completion.chunk","created":1718000001,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	streamDone  = "data: [DONE]\n\n"
)

// sseBenchEngine serves streamEvents events and [DONE]; when paced, it
// writes each event only once the client has read the one before
// (next).
type sseBenchEngine struct {
	url  *url.URL
	next chan struct{}
}

func newSSEBenchEngine(b *testing.B, paced bool) *sseBenchEngine {
	b.Helper()
	e := &sseBenchEngine{}
	if paced {
		e.next = make(chan struct{})
	}
	event := []byte(streamEvent)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		rc := http.NewResponseController(w)
		for i := range streamEvents {
			if i > 0 && e.next != nil {
				select {
				case <-e.next:
				case <-r.Context().Done():
					return
				}
			}
			if _, err := w.Write(event); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
		_, _ = io.WriteString(w, streamDone)
	}))
	b.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	e.url = u
	return e
}

// streamProxy serves a Proxy in front of engine as cmd/slotgate builds
// it (flights tracked, a Changed hook); passthrough forwards streamPath
// without a slot, so that nothing is counted.
// With relayed, the answers go through a stream relay of their own.
func streamProxy(b *testing.B, engine *url.URL, passthrough, relayed bool) *url.URL {
	lim, err := limiter.New(limiter.Options{Slots: 64})
	if err != nil {
		b.Fatal(err)
	}
	var front *http.Server
	var rel *proxy.Relay
	if relayed {
		rel, _ = startRelay(b, func() *http.Server { return front })
	}
	u, srv := benchProxyServer(b, engine, lim, func(g *gate.Options, o *proxy.Options) {
		g.Flights = inflight.New(func() {})
		g.Changed = func() {}
		o.Relay = rel
		if passthrough {
			o.PassthroughPaths = []string{streamPath}
		}
	})
	front = srv
	return u
}

// runStream posts one chat request per iteration and reads its answer,
// telling a paced engine after each whole event.
func runStream(b *testing.B, target string, eng *sseBenchEngine) {
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	b.Cleanup(c.CloseIdleConnections)
	want := streamEvents*len(streamEvent) + len(streamDone)
	buf := make([]byte, 32<<10)
	readAnswer := func() error {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, target,
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"Hello there"}],"stream":true}`))
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		got, told := 0, 1 // the engine sends the first event untold
		for {
			n, err := resp.Body.Read(buf)
			got += n
			for ; eng.next != nil && told < streamEvents && got >= told*len(streamEvent); told++ {
				eng.next <- struct{}{}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
		if got != want {
			return fmt.Errorf("read %d bytes, want %d", got, want)
		}
		return nil
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := processCPU()
	for b.Loop() {
		if err := readAnswer(); err != nil {
			b.Fatal(err)
		}
	}
	cpu := processCPU() - cpu0
	runtime.ReadMemStats(&after)
	events := float64(b.N * streamEvents)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/events, "ns/event")
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/events, "cpu-ns/event")
	}
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/events, "B/event")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/events, "allocs/event")
	b.ReportMetric(0, "ns/op") // an op is a whole answer: the per-event figures say more
}
