package main

import (
	"context"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
)

// fakeEngine serves Generate as enginesim does, a chunk per token then the
// complete message, unless the prompt asks for a broken stream.
type fakeEngine struct {
	enginepb.UnimplementedVllmEngineServer
	unhealthy bool
}

func (f *fakeEngine) Generate(req *enginepb.GenerateRequest, stream grpc.ServerStreamingServer[enginepb.GenerateResponse]) error {
	n := req.GetSamplingParams().GetMaxTokens()
	switch req.GetText() {
	case "fail":
		return status.Error(codes.ResourceExhausted, "full")
	case "short":
		n--
	}
	for i := range n {
		if err := stream.Send(&enginepb.GenerateResponse{Response: &enginepb.GenerateResponse_Chunk{
			Chunk: &enginepb.GenerateStreamChunk{TokenIds: []uint32{i}, CompletionTokens: 1},
		}}); err != nil {
			return err
		}
	}
	if req.GetText() == "no complete" {
		return nil
	}
	return stream.Send(&enginepb.GenerateResponse{Response: &enginepb.GenerateResponse_Complete{
		Complete: &enginepb.GenerateComplete{CompletionTokens: n, FinishReason: "length"},
	}})
}

func (f *fakeEngine) HealthCheck(context.Context, *enginepb.HealthCheckRequest) (*enginepb.HealthCheckResponse, error) {
	return &enginepb.HealthCheckResponse{Healthy: !f.unhealthy, Message: "fake"}, nil
}

// startFakeEngine serves f on a loopback port and returns its address.
func startFakeEngine(t *testing.T, f *fakeEngine) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	enginepb.RegisterVllmEngineServer(srv, f)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln) //nolint:errcheck // ends with Stop
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return ln.Addr().String()
}

func TestReadGenerate(t *testing.T) {
	addr := startFakeEngine(t, &fakeEngine{})
	clients, closeConns, err := grpcClients(addr, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConns()
	for _, tc := range []struct {
		prompt   string
		msgs     int
		wantErr  string
		wantTTFT bool
	}{
		{"hi", 6, "", true},
		{"short", 5, "complete message of 4 tokens, want 5", false},
		{"no complete", 5, "without a complete one", false},
		{"fail", 0, "full", false},
	} {
		req := generateRequest(5)
		req.Input = &enginepb.GenerateRequest_Text{Text: tc.prompt}
		ttft, msgs, err := readGenerate(t.Context(), clients[0], req, 5)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: error %v, want one containing %q", tc.prompt, err, tc.wantErr)
		}
		if msgs != tc.msgs {
			t.Errorf("%s: %d messages, want %d", tc.prompt, msgs, tc.msgs)
		}
		if (ttft > 0) != tc.wantTTFT {
			t.Errorf("%s: TTFT %v, want a positive one: %v", tc.prompt, ttft, tc.wantTTFT)
		}
	}
}

func TestGRPCLoop(t *testing.T) {
	addr := startFakeEngine(t, &fakeEngine{})
	const conc = 40 // two connections
	r, err := grpcLoop(t.Context(), addr, conc, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.calls == 0 || r.other != 0 {
		t.Fatalf("%d calls, %d failed (first: %v); want some, none failed", r.calls, r.other, r.firstErr)
	}
	if r.msgs != r.calls*(grpcMaxTokens+1) || len(r.ttft) != r.calls {
		t.Errorf("%d calls, %d messages, %d TTFTs; want %d messages a call and a TTFT each", r.calls, r.msgs, len(r.ttft), grpcMaxTokens+1)
	}
	if r.allMsgs < int64(r.msgs) {
		t.Errorf("%d messages in all, fewer than the %d of the calls counted", r.allMsgs, r.msgs)
	}
	if !slices.IsSorted(r.ttft) {
		t.Error("TTFTs not sorted")
	}
	if _, err := grpcLoop(t.Context(), "127.0.0.1:1", 1, 50*time.Millisecond); err != nil {
		t.Errorf("a target that does not answer: %v, want the calls counted as failed, not an error", err)
	}
}

func TestGRPCConns(t *testing.T) {
	for _, tc := range []struct{ conc, want int }{{1, 1}, {32, 1}, {33, 2}, {64, 2}, {65, 3}} {
		if got := grpcConns(tc.conc); got != tc.want {
			t.Errorf("grpcConns(%d) = %d, want %d", tc.conc, got, tc.want)
		}
	}
}

func TestGRPCHealth(t *testing.T) {
	if err := grpcHealth(t.Context(), startFakeEngine(t, &fakeEngine{})); err != nil {
		t.Errorf("healthy engine: %v", err)
	}
	if err := grpcHealth(t.Context(), startFakeEngine(t, &fakeEngine{unhealthy: true})); err == nil {
		t.Error("unhealthy engine: want an error")
	}
	if err := grpcHealth(t.Context(), "127.0.0.1:1"); err == nil {
		t.Error("nothing listening: want an error")
	}
}

func TestGRPCTargets(t *testing.T) {
	e := &env{slotgateBin: "/x/slotgate", haproxy: "/x/haproxy", nginx: "/x/nginx"}
	ts := e.targets([]string{"direct", "slotgate", "haproxy", "haproxy-maxqueue", "nginx"}, true)
	var names []string
	for _, tg := range ts {
		names = append(names, tg.name)
	}
	if want := []string{"direct", "slotgate", "haproxy", "nginx"}; !slices.Equal(names, want) {
		t.Errorf("gRPC targets = %v, want %v (no haproxy-maxqueue over gRPC)", names, want)
	}
	in, err := ts[0].up(t.Context(), upstream{http: "127.0.0.1:1", grpc: "127.0.0.1:2"}, 8, 16)
	if err != nil || in.addr != "127.0.0.1:2" || in.pid != 0 {
		t.Errorf("direct over gRPC: %+v, %v; want the engine's gRPC address and no process", in, err)
	}
	in, err = e.targets([]string{"direct"}, false)[0].up(t.Context(), upstream{http: "127.0.0.1:1"}, 8, 16)
	if err != nil || in.addr != "127.0.0.1:1" {
		t.Errorf("direct over HTTP: %+v, %v; want the engine's HTTP address", in, err)
	}
}

func TestGRPCScenarioPlumbing(t *testing.T) {
	scs, err := pick(scenarios(), "grpc-stream")
	if err != nil || len(scs) != 1 {
		t.Fatalf("pick grpc-stream = %v, %v", scs, err)
	}
	sc := scs[0]
	if !sc.grpc || sc.n <= grpcConc || sc.measure == nil {
		t.Errorf("grpc-stream: grpc %v, N %d, measure set %v; want gRPC, N above the concurrency %d, a measurement",
			sc.grpc, sc.n, sc.measure != nil, grpcConc)
	}
	for _, m := range append(slices.Clone(sc.ratio), sc.added...) {
		if !slices.Contains(sc.metrics, m) {
			t.Errorf("grpc-stream: %q shown against direct but not measured", m)
		}
	}
	if !slices.Contains(scenarioNames(), "grpc-stream") {
		t.Error("grpc-stream missing from the --scenarios help")
	}
}

func TestNeedEnginesim(t *testing.T) {
	all := scenarios()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if got, skipped, err := needEnginesim(all, self, false); err != nil || len(got) != len(all) || skipped != nil {
		t.Errorf("binary present: %d of %d scenarios, skipped %v, %v; want all", len(got), len(all), skipped, err)
	}
	got, skipped, err := needEnginesim(all, "/nowhere/enginesim", false)
	if err != nil || len(got) != len(all)-1 || slices.ContainsFunc(got, func(s scenario) bool { return s.grpc }) {
		t.Errorf("binary missing: %d of %d scenarios, %v; want all but grpc-stream", len(got), len(all), err)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "grpc-stream: no enginesim binary at /nowhere/enginesim") {
		t.Errorf("skipped %q, want grpc-stream's reason", skipped)
	}
	if _, _, err := needEnginesim(all, "/nowhere/enginesim", true); err == nil {
		t.Error("binary missing, grpc-stream named: want an error")
	}
	httpOnly, _ := pick(all, "fast-c1")
	if got, _, err := needEnginesim(httpOnly, "/nowhere/enginesim", true); err != nil || len(got) != 1 {
		t.Errorf("binary missing, no gRPC scenario named: %v, %v; want fast-c1 kept", got, err)
	}
}

func TestNginxHTTP2On(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"nginx version: nginx/1.22.1", false},
		{"nginx version: nginx/1.25.0", false},
		{"nginx version: nginx/1.25.1", true},
		{"nginx version: nginx/1.26.3 (Debian)", true},
		{"nginx version: nginx/2.0", true},
		{"nginx version: openresty/1.21.4.1", false},
		{"", false},
	} {
		if got := nginxHTTP2On(tc.v); got != tc.want {
			t.Errorf("nginxHTTP2On(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}
