package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
)

// attemptDeadline bounds every request of the mix: a never-ending answer
// ends when its client gives up.
const attemptDeadline = 3 * time.Second

// plan is one request's random choices.
type plan struct {
	proto      Protocol
	stream     bool
	maxTokens  int
	abortAfter time.Duration // the client cancels after this; 0: never
	readPause  time.Duration // a slow reader's pause between reads; 0: none
	retries    int           // tries after the first on 529 or 503
	deadline   time.Duration
}

// drawPlan draws the client mix: streaming HTTP 45%, plain HTTP 25%,
// gRPC 30% (a tenth of it unstreamed); 15% abort at a random moment in
// their first 400ms (queued, in prefill or streaming), 8% of the streams
// read slowly, and 20% retry after a refusal.
func drawPlan(rng *rand.Rand) plan {
	p := plan{maxTokens: 1 + rng.IntN(24), deadline: attemptDeadline}
	switch r := rng.IntN(100); {
	case r < 45:
		p.proto, p.stream = HTTP, true
	case r < 70:
		p.proto = HTTP
	case r < 97:
		p.proto, p.stream = GRPC, true
	default:
		p.proto = GRPC
	}
	if rng.IntN(100) < 15 {
		p.abortAfter = time.Duration(1+rng.IntN(400)) * time.Millisecond
	}
	if p.stream && rng.IntN(100) < 8 {
		p.readPause = time.Duration(2+rng.IntN(14)) * time.Millisecond
	}
	if rng.IntN(100) < 20 {
		p.retries = 1 + rng.IntN(3)
	}
	return p
}

// clients sends the mix's requests through slotgate and records them.
type clients struct {
	http   *http.Client
	grpc   enginepb.VllmEngineClient
	base   string // slotgate's proxy URL
	prefix string // of every request id
	seq    atomic.Uint64
	active *activeGauge

	mu       sync.Mutex
	attempts []Attempt
	retries  atomic.Int64
}

func (c *clients) nextID() string {
	return c.prefix + strconv.FormatUint(c.seq.Add(1), 10)
}

func (c *clients) record(a Attempt) {
	c.mu.Lock()
	c.attempts = append(c.attempts, a)
	c.mu.Unlock()
}

// send runs p to its end, retries included, unless stop is closed between
// tries. Attempts run on ctx, which only the soak's own end cancels.
func (c *clients) send(ctx context.Context, stop <-chan struct{}, rng *rand.Rand, p plan) {
	for try := 0; ; try++ {
		a, retryAfter := c.attempt(ctx, p, c.nextID())
		c.record(a)
		if try >= p.retries || !retryable(a) {
			return
		}
		c.retries.Add(1)
		// Exponential backoff from 20ms with ±50% jitter, and never
		// sooner than the answer's Retry-After.
		wait := time.Duration(float64(20*time.Millisecond<<try) * (0.5 + rng.Float64()))
		wait = max(wait, retryAfter)
		select {
		case <-time.After(wait):
		case <-stop:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (c *clients) attempt(ctx context.Context, p plan, id string) (Attempt, time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, p.deadline)
	defer cancel()
	if p.abortAfter > 0 {
		t := time.AfterFunc(p.abortAfter, cancel)
		defer t.Stop()
	}
	if p.proto == GRPC {
		return c.grpcAttempt(ctx, p, id)
	}
	return c.httpAttempt(ctx, p, id)
}

func retryable(a Attempt) bool {
	if a.Aborted {
		return false
	}
	if a.Protocol == GRPC {
		return a.Answered && (a.Code == codes.ResourceExhausted || a.Code == codes.Unavailable)
	}
	return a.Status == 529 || a.Status == http.StatusServiceUnavailable
}

// httpAttempt sends one chat completion; ctx carries its deadline and
// abort.
func (c *clients) httpAttempt(ctx context.Context, p plan, id string) (Attempt, time.Duration) {
	a := Attempt{ID: id, Protocol: HTTP}
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			wrote.Store(true)
		}
	}}
	body, _ := json.Marshal(chatRequest{
		Model:     "sim-model",
		Messages:  []chatMessage{{Role: "user", Content: "soak " + id}},
		MaxTokens: p.maxTokens,
		Stream:    p.stream,
	})
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost,
		c.base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		a.Err = err.Error()
		return a, 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", id)
	resp, err := c.http.Do(req)
	a.Wrote = wrote.Load()
	if err != nil {
		ended(ctx, &a, err)
		return a, 0
	}
	defer resp.Body.Close()
	a.Status, a.Reason = resp.StatusCode, resp.Header.Get("X-Slotgate-Reason")
	retryAfter := seconds(resp.Header.Get("Retry-After"))
	// A slow reader is not counted: slotgate may have finished with it
	// long before it reads its last byte from the socket's buffers.
	if a.Status == http.StatusOK && p.readPause == 0 {
		c.active.enter()
		defer c.active.leave()
	}
	got, err := readBody(ctx, resp.Body, p.readPause)
	if err != nil {
		ended(ctx, &a, err)
		return a, retryAfter
	}
	a.Complete = a.Status == http.StatusOK && completeBody(got, p.stream)
	if a.Status == http.StatusOK && !a.Complete {
		a.Err = "incomplete answer"
	}
	return a, retryAfter
}

type chatRequest struct {
	Model     string        `json:"model"`
	Messages  []chatMessage `json:"messages"`
	MaxTokens int           `json:"max_tokens"`
	Stream    bool          `json:"stream"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// readBody reads r to its end, pausing between reads of 256 bytes when
// pause is set; it keeps at most 1 MiB.
func readBody(ctx context.Context, r io.Reader, pause time.Duration) ([]byte, error) {
	if pause == 0 {
		return io.ReadAll(io.LimitReader(r, 1<<20))
	}
	var out []byte
	buf := make([]byte, 256)
	for {
		n, err := r.Read(buf)
		if len(out) < 1<<20 {
			out = append(out, buf[:n]...)
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if err := sleep(ctx, pause); err != nil {
			return out, err
		}
	}
}

// completeBody reports whether an answer is whole: an SSE stream that
// reached [DONE], or a chat completion with its choices.
func completeBody(b []byte, stream bool) bool {
	if stream {
		return bytes.Contains(b, []byte("data: [DONE]"))
	}
	var v struct {
		Choices []json.RawMessage `json:"choices"`
	}
	return json.Unmarshal(b, &v) == nil && len(v.Choices) > 0
}

// ended records how an attempt that failed with err ended: by its
// client, when its context is done, or else with the error.
func ended(ctx context.Context, a *Attempt, err error) {
	if ctx.Err() != nil {
		a.Aborted = true
		return
	}
	a.Err = err.Error()
}

// grpcAttempt makes one Generate call through slotgate's proxy port.
func (c *clients) grpcAttempt(ctx context.Context, p plan, id string) (Attempt, time.Duration) {
	a := Attempt{ID: id, Protocol: GRPC}
	ctx = metadata.AppendToOutgoingContext(ctx, "x-request-id", id)
	var trailer metadata.MD
	req := &enginepb.GenerateRequest{
		RequestId:      id,
		Input:          &enginepb.GenerateRequest_Text{Text: "soak " + id},
		SamplingParams: &enginepb.SamplingParams{MaxTokens: proto.Uint32(uint32(p.maxTokens))},
		Stream:         p.stream,
	}
	stream, err := c.grpc.Generate(ctx, req, grpc.Trailer(&trailer))
	if err != nil {
		grpcEnded(ctx, &a, err, trailer)
		return a, seconds(first(trailer, "retry-after"))
	}
	entered, complete := false, false
	defer func() {
		if entered {
			c.active.leave()
		}
	}()
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			a.Answered, a.Code, a.Complete = true, codes.OK, complete
			if !complete {
				a.Err = "the stream ended without its complete message"
			}
			return a, 0
		}
		if err != nil {
			grpcEnded(ctx, &a, err, trailer)
			return a, seconds(first(trailer, "retry-after"))
		}
		if !entered && p.readPause == 0 {
			c.active.enter()
			entered = true
		}
		complete = complete || m.GetComplete() != nil
		if p.readPause > 0 {
			if err := sleep(ctx, p.readPause); err != nil {
				a.Aborted = true
				return a, 0
			}
		}
	}
}

// grpcEnded records how a call that failed with err ended.
func grpcEnded(ctx context.Context, a *Attempt, err error, trailer metadata.MD) {
	code := status.Code(err)
	if code == codes.DeadlineExceeded {
		// The server's deadline is the client's, sent along: its
		// DEADLINE_EXCEEDED may arrive just before the client's own
		// timer has ended ctx.
		if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			<-ctx.Done()
		}
	}
	if ctx.Err() != nil {
		a.Aborted = true
		return
	}
	a.Answered, a.Code, a.Reason = true, code, first(trailer, "x-slotgate-reason")
	if code != codes.ResourceExhausted {
		a.Err = err.Error()
	}
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// seconds parses a Retry-After of whole seconds; 0 when absent or bad.
func seconds(s string) time.Duration {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// sleep waits d or until ctx ends, returning ctx's error then.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// activeGauge counts the requests clients see admitted (an answer's
// status 200 or a first gRPC message) and not yet ended, and checks
// each rise against bound.
type activeGauge struct {
	n, peak atomic.Int64
	bound   func() int
	vs      *violations
}

func (g *activeGauge) enter() {
	v := g.n.Add(1)
	for {
		p := g.peak.Load()
		if v <= p || g.peak.CompareAndSwap(p, v) {
			break
		}
	}
	if b := g.bound(); v > int64(b) {
		g.vs.add(InvClientConcurrency, "%d requests admitted and unfinished as clients see them, over N+Q = %d", v, b)
	}
}

func (g *activeGauge) leave() { g.n.Add(-1) }
