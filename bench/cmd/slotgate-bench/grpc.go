package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
)

// The grpc-stream scenario: vLLM's gRPC Generate, server-streaming, served
// by enginesim (--grpc-listen) and called in cleartext HTTP/2 (h2c), as a
// router calls an engine's gRPC port. enginesim sends one message per step
// that samples tokens, then a complete message, so a call of grpcMaxTokens
// tokens is grpcMaxTokens+1 messages when the engine's sender keeps up
// with its steps.
const (
	grpcConc      = 64 // calls in flight, closed loop
	grpcMaxTokens = 64 // tokens per call (ignore_eos: exactly these)
	// grpcSpeedup divides enginesim's modelled step times (about 6 ms a
	// decode step, 16 ms more when a prompt is prefilled in the step):
	// about 1 ms a step, so that the 64 streams together ask for tens of
	// thousands of messages a second, more than a proxy forwards with a
	// share of two cores, while each call still lasts about 100 ms.
	grpcSpeedup = 10
	// grpcStreamsPerConn is how many calls share one client connection,
	// as a router multiplexes its calls over a few connections.
	grpcStreamsPerConn = 32
	// grpcCallTimeout bounds one call, as the HTTP client's timeout does.
	grpcCallTimeout = 10 * time.Second
)

// grpcScenario is the grpc-stream scenario. Its cap is the fast path's,
// N=256, far above the concurrency: nothing is refused or queued.
func grpcScenario() scenario {
	return scenario{
		name: "grpc-stream",
		about: fmt.Sprintf("gRPC streaming: vLLM's Generate (server-streaming, h2c) from enginesim --speedup-ratio %d, %d tokens a call, one message a step "+
			"(%d with the complete one), concurrency %d (closed loop) over %d client connections (N=256, Q=16, never reached); "+
			"TTFT from call to first message; proxy CPU per message received",
			grpcSpeedup, grpcMaxTokens, grpcMaxTokens+1, grpcConc, grpcConns(grpcConc)),
		n:       256,
		q:       16,
		grpc:    true,
		targets: []string{"direct", "slotgate", "slotgate-proxyport", "haproxy", "nginx"},
		metrics: []string{"calls/s", "msgs/s", "TTFT p50 ms", "TTFT p99 ms", "proxy CPU µs/msg", "errors"},
		ratio:   []string{"msgs/s"},
		added:   []string{"TTFT p50 ms", "TTFT p99 ms"},
		warmup:  true,
		measure: grpcStream,
	}
}

// grpcStream is the grpc-stream scenario's measurement.
func grpcStream(ctx context.Context, t trial) (map[string]float64, error) {
	cpu := startCPU(t.inst.pid)
	r, err := grpcLoop(ctx, t.inst.addr, grpcConc, t.d)
	if err != nil {
		return nil, err
	}
	if r.calls == 0 {
		return nil, fmt.Errorf("no call complete (%d errors, first: %v)", r.other, r.firstErr)
	}
	// Per message received in the whole run, the calls still in flight at
	// the deadline included: the proxy's CPU was read over all of them.
	perMsg, err := cpu.perRequest(int(r.allMsgs))
	if err != nil {
		return nil, fmt.Errorf("proxy CPU: %w", err)
	}
	s := r.elapsed.Seconds()
	return map[string]float64{
		"calls/s":          float64(r.calls) / s,
		"msgs/s":           float64(r.msgs) / s,
		"TTFT p50 ms":      ms(percentile(r.ttft, 50)),
		"TTFT p99 ms":      ms(percentile(r.ttft, 99)),
		"proxy CPU µs/msg": perMsg,
		"errors":           float64(r.other),
	}, nil
}

// grpcResult is one closed-loop run of Generate calls.
type grpcResult struct {
	elapsed  time.Duration
	calls    int             // complete calls that ended within the run
	msgs     int             // their messages
	ttft     []time.Duration // call to first message, per complete call
	other    int             // failed calls: a status, a short stream
	firstErr error
	allMsgs  int64 // messages received, whenever their call ended
}

// grpcConns is how many client connections conc calls use.
func grpcConns(conc int) int { return max(1, (conc+grpcStreamsPerConn-1)/grpcStreamsPerConn) }

// grpcLoop runs conc workers that each make one Generate call after the
// other to addr for d, spread over grpcConns(conc) connections.
func grpcLoop(ctx context.Context, addr string, conc int, d time.Duration) (grpcResult, error) {
	clients, closeConns, err := grpcClients(addr, grpcConns(conc))
	if err != nil {
		return grpcResult{}, err
	}
	defer closeConns()
	req := generateRequest(grpcMaxTokens)
	var (
		res  grpcResult
		next atomic.Int64 // round robin over the connections
		all  atomic.Int64
	)
	res.elapsed = runClosedLoop(ctx, conc, d, func() func() {
		c := clients[int(next.Add(1))%len(clients)]
		ttft, msgs, err := readGenerate(ctx, c, req, grpcMaxTokens)
		all.Add(int64(msgs))
		return func() {
			if err != nil {
				res.other++
				res.firstErr = cmpOr(res.firstErr, err)
				return
			}
			res.calls++
			res.msgs += msgs
			res.ttft = append(res.ttft, ttft)
		}
	})
	res.allMsgs = all.Load()
	slices.Sort(res.ttft)
	return res, nil
}

// grpcClients returns n clients of addr, each on a connection of its own,
// and what closes the connections.
func grpcClients(addr string, n int) ([]enginepb.VllmEngineClient, func(), error) {
	conns := make([]*grpc.ClientConn, 0, n)
	closeConns := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	clients := make([]enginepb.VllmEngineClient, n)
	for i := range clients {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			closeConns()
			return nil, nil, fmt.Errorf("grpc client: %w", err)
		}
		conns = append(conns, conn)
		clients[i] = enginepb.NewVllmEngineClient(conn)
	}
	return clients, closeConns, nil
}

// generateRequest is a streaming Generate of exactly maxTokens tokens
// after a short prompt.
func generateRequest(maxTokens uint32) *enginepb.GenerateRequest {
	return &enginepb.GenerateRequest{
		Input:          &enginepb.GenerateRequest_Text{Text: "hi"},
		SamplingParams: &enginepb.SamplingParams{MaxTokens: &maxTokens, IgnoreEos: true},
		Stream:         true,
	}
}

// readGenerate makes one Generate call and reads its stream to the end,
// noting when the first message arrives. It fails unless the call ends OK
// with a complete message of wantTokens tokens. It returns the messages
// read in any case.
func readGenerate(ctx context.Context, c enginepb.VllmEngineClient, req *enginepb.GenerateRequest, wantTokens uint32) (time.Duration, int, error) {
	ctx, cancel := context.WithTimeout(ctx, grpcCallTimeout)
	defer cancel()
	t0 := time.Now()
	stream, err := c.Generate(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	var (
		ttft time.Duration
		msgs int
		m    enginepb.GenerateResponse // reused: RecvMsg resets it
		last *enginepb.GenerateComplete
	)
	for {
		err := stream.RecvMsg(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, msgs, err
		}
		if msgs == 0 {
			ttft = time.Since(t0)
		}
		msgs++
		last = m.GetComplete()
	}
	switch {
	case last == nil:
		return 0, msgs, fmt.Errorf("stream of %d messages without a complete one at its end", msgs)
	case last.GetCompletionTokens() != wantTokens:
		return 0, msgs, fmt.Errorf("complete message of %d tokens, want %d", last.GetCompletionTokens(), wantTokens)
	}
	return ttft, msgs, nil
}

// grpcHealth is the gRPC targets' probe: vLLM's HealthCheck, through the
// target to the engine, answers healthy.
func grpcHealth(ctx context.Context, addr string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	resp, err := enginepb.NewVllmEngineClient(conn).HealthCheck(ctx, &enginepb.HealthCheckRequest{})
	if err != nil {
		return err
	}
	if !resp.GetHealthy() {
		return fmt.Errorf("HealthCheck: not healthy: %s", resp.GetMessage())
	}
	return nil
}

// startEnginesim starts enginesim with its gRPC API, shaped for the
// grpc-stream scenario, and waits until its HealthCheck answers.
func (e *env) startEnginesim(ctx context.Context) (*instance, upstream, error) {
	if e.enginesim == "" {
		return nil, upstream{}, errors.New("no enginesim binary")
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, upstream{}, err
	}
	up := upstream{http: "127.0.0.1:" + strconv.Itoa(ports[0]), grpc: "127.0.0.1:" + strconv.Itoa(ports[1])}
	in, err := e.launch(ctx, "enginesim", up.grpc, grpcHealth, e.enginesim,
		"--listen", up.http,
		"--grpc-listen", up.grpc,
		"--speedup-ratio", strconv.Itoa(grpcSpeedup),
		"--max-num-seqs", "256", // above the concurrency: every call runs at once
		"--log-level", "warn",
	)
	if err != nil {
		return nil, upstream{}, err
	}
	return in, up, nil
}
