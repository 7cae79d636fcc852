package loadgen_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slotgate/slotgate/loadgen"
)

// waitLimit bounds every run in these tests, so that a broken generator
// fails a test instead of hanging it. Nothing here measures time.
const waitLimit = 30 * time.Second

// checkLeaks registers a goroutine leak check; call it first, so that it
// runs after every other cleanup (servers closed, runs ended).
func checkLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

// engine is a fake OpenAI-compatible engine. The zero value answers every
// request with a stream of max_tokens text chunks and a usage chunk.
type engine struct {
	t *testing.T
	// status gives request n's status (n counts from 0 in arrival order);
	// nil means 200. A non-200 gets an OpenAI error body.
	status func(n int64) int
	// retryAfter, when set, is every non-200's Retry-After.
	retryAfter string
	// chunks is the number of text chunks; 0 means max_tokens.
	chunks int
	// gap is the pause between chunks.
	gap time.Duration
	// completionTokens overrides usage.completion_tokens when positive.
	completionTokens int
	// block makes every request wait until its client leaves.
	block bool
	// gateAt, when positive, holds every request until gateAt are in
	// flight at once; from then on none waits.
	gateAt int64
	// raw, when set, is written as the whole 200 stream body.
	raw string

	n, inFlight, maxInFlight atomic.Int64
	arrived                  chan struct{} // one value per request, if made
	gateOnce                 sync.Once
	gate                     chan struct{}

	mu       sync.Mutex
	requests []engineRequest
}

type engineRequest struct {
	Model         string `json:"model"`
	Prompt        string `json:"prompt"`
	Messages      []struct{ Role, Content string }
	MaxTokens     int  `json:"max_tokens"`
	Stream        bool `json:"stream"`
	IgnoreEOS     bool `json:"ignore_eos"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	path string
}

func (r engineRequest) promptText() string {
	if len(r.Messages) > 0 {
		return r.Messages[0].Content
	}
	return r.Prompt
}

// start serves e on a loopback httptest server, closed at cleanup.
func (e *engine) start(t *testing.T) *httptest.Server {
	t.Helper()
	e.t = t
	e.gate = make(chan struct{})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv
}

func (e *engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := e.n.Add(1) - 1
	cur := e.inFlight.Add(1)
	defer e.inFlight.Add(-1)
	for m := e.maxInFlight.Load(); cur > m && !e.maxInFlight.CompareAndSwap(m, cur); m = e.maxInFlight.Load() {
	}
	var req engineRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		e.t.Errorf("engine: decode request: %v", err)
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	req.path = r.URL.Path
	e.mu.Lock()
	e.requests = append(e.requests, req)
	e.mu.Unlock()
	if e.arrived != nil {
		e.arrived <- struct{}{}
	}
	if !e.wait(r.Context(), cur) {
		return
	}
	if code := e.statusOf(n); code != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		if e.retryAfter != "" {
			w.Header().Set("Retry-After", e.retryAfter)
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":{"message":"Server overloaded: worker at capacity","type":"Overloaded","code":%d}}`, code)
		return
	}
	e.answer(w, r, req)
}

// wait holds a request as block and gateAt say; false if the client left.
func (e *engine) wait(ctx context.Context, cur int64) bool {
	if e.block {
		<-ctx.Done()
		return false
	}
	if e.gateAt <= 0 {
		return true
	}
	if cur >= e.gateAt {
		e.gateOnce.Do(func() { close(e.gate) })
	}
	select {
	case <-e.gate:
		return true
	case <-ctx.Done():
		return false
	}
}

func (e *engine) statusOf(n int64) int {
	if e.status == nil {
		return http.StatusOK
	}
	return e.status(n)
}

// answer writes a stream or a whole response for req.
func (e *engine) answer(w http.ResponseWriter, r *http.Request, req engineRequest) {
	chunks := e.chunks
	if chunks == 0 {
		chunks = req.MaxTokens
	}
	promptTokens := len(strings.Fields(req.promptText()))
	completion := chunks
	if e.completionTokens > 0 {
		completion = e.completionTokens
	}
	usage := fmt.Sprintf(`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`,
		promptTokens, completion, promptTokens+completion)
	chat := req.path == loadgen.EndpointChat
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		text := strings.Repeat(" tok", chunks)
		if chat {
			fmt.Fprintf(w, `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q}}],%s}`, text, usage)
		} else {
			fmt.Fprintf(w, `{"object":"text_completion","choices":[{"index":0,"text":%q}],%s}`, text, usage)
		}
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flush := func(s string) {
		fmt.Fprint(w, s)
		w.(http.Flusher).Flush()
	}
	if e.raw != "" {
		flush(e.raw)
		return
	}
	if chat { // vLLM's first chat chunk carries the role and no text
		flush(`data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n")
	}
	for i := range chunks {
		if i > 0 && e.gap > 0 {
			select {
			case <-time.After(e.gap):
			case <-r.Context().Done():
				return
			}
		}
		if chat {
			flush(`data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" tok"}}]}` + "\n\n")
		} else {
			flush(`data: {"object":"text_completion","choices":[{"index":0,"text":" tok"}]}` + "\n\n")
		}
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		flush(`data: {"choices":[],` + usage + "}\n\n")
	}
	flush("data: [DONE]\n\n")
}

// recorded returns the requests the engine received.
func (e *engine) recorded() []engineRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]engineRequest(nil), e.requests...)
}

// options returns working options for a closed loop against url.
func options(url string) loadgen.Options {
	return loadgen.Options{
		Mode:         loadgen.Closed,
		Concurrency:  2,
		Requests:     4,
		DrainTimeout: waitLimit,
		URL:          url,
		Model:        "sim-model",
		Stream:       true,
		PromptTokens: loadgen.FixedDist(10),
		MaxTokens:    loadgen.FixedDist(4),
		Timeout:      waitLimit,
		Seed:         1,
	}
}

// runLoad runs a generator with opts and checks the invariants every
// report keeps: sent is the sum of by_status, ok is the 2xx count, and the
// latency samples come from successful requests only.
func runLoad(t *testing.T, ctx context.Context, opts loadgen.Options) loadgen.Report {
	t.Helper()
	g, err := loadgen.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	r := g.Run(ctx)
	var sum int64
	for _, n := range r.ByStatus {
		sum += n
	}
	if sum != r.Sent {
		t.Errorf("sent = %d, but by_status %v sums to %d", r.Sent, r.ByStatus, sum)
	}
	if r.E2E.Count != int(r.OK) {
		t.Errorf("e2e count = %d, want ok = %d", r.E2E.Count, r.OK)
	}
	if r.MaxConcurrencyObserved > r.Sent {
		t.Errorf("max concurrency %d above sent %d", r.MaxConcurrencyObserved, r.Sent)
	}
	checkRetryFigures(t, r)
	return r
}

// checkRetryFigures checks the arithmetic of the retry figures every
// report keeps: retries = tries − sent, each request tried at least once
// and at most config.retry times, timed_out = by_status["deadline"],
// gave_up among the refused, and the goodput no more than the throughput.
func checkRetryFigures(t *testing.T, r loadgen.Report) {
	t.Helper()
	if r.Retries != r.Tries-r.Sent {
		t.Errorf("retries = %d, want tries %d − sent %d", r.Retries, r.Tries, r.Sent)
	}
	if r.Tries < r.Sent || r.Tries > r.Sent*int64(r.Config.Retry) {
		t.Errorf("tries = %d, want from sent %d to sent × retry %d", r.Tries, r.Sent, r.Config.Retry)
	}
	if r.TimedOut != r.ByStatus[loadgen.OutcomeDeadline] {
		t.Errorf("timed_out = %d, want by_status[deadline] %d", r.TimedOut, r.ByStatus[loadgen.OutcomeDeadline])
	}
	if r.GaveUp > r.Sent-r.OK-r.TimedOut {
		t.Errorf("gave_up = %d, above sent %d − ok %d − timed_out %d", r.GaveUp, r.Sent, r.OK, r.TimedOut)
	}
	if r.GoodputPerSecond > r.RequestsPerSecond {
		t.Errorf("goodput %g/s above the successful %g/s", r.GoodputPerSecond, r.RequestsPerSecond)
	}
	if r.OKFirstTry > r.OK || r.OK-r.OKFirstTry > r.Retries {
		t.Errorf("ok_first_try = %d: above ok %d, or leaving more retried successes than the %d retries", r.OKFirstTry, r.OK, r.Retries)
	}
}
