package loadgrpc_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/slotgate/slotgate/internal/bounded"
	"github.com/slotgate/slotgate/load/loadgrpc"
	"github.com/slotgate/slotgate/load/report"
	loadv1 "github.com/slotgate/slotgate/protos/slotgate/load/v1"
)

// timeout bounds every wait for something that must happen. It is
// generous: the tests never assert how fast anything is, only that it
// happens.
const timeout = 30 * time.Second

// Interface guards: the Hub is a Source, and the Service implements the
// generated server interface.
var (
	_ loadgrpc.Source           = (*report.Hub)(nil)
	_ loadv1.LoadReporterServer = (*loadgrpc.Service)(nil)
)

// countingSource counts the Watch calls in progress, so a test can see a
// WatchLoad handler end.
type countingSource struct {
	loadgrpc.Source
	active atomic.Int64
}

func (c *countingSource) Watch(ctx context.Context, f func(*report.Snapshot) error) error {
	c.active.Add(1)
	defer c.active.Add(-1)
	return c.Source.Watch(ctx, f)
}

// fixture is a Hub whose load the test sets, served by Serve, and a client
// connected to it.
type fixture struct {
	t      *testing.T
	hub    *report.Hub
	src    *countingSource
	conn   *grpc.ClientConn
	client loadv1.LoadReporterClient

	mu   sync.Mutex
	load report.Snapshot // what Compute returns

	stopServe func() error
}

type fixtureOptions struct {
	load      report.Snapshot
	heartbeat time.Duration
	serve     loadgrpc.ServeOptions
	tcp       bool // a 127.0.0.1 listener rather than bufconn
}

// newFixture starts everything; the cleanups stop it all and then check
// that no goroutine is left.
func newFixture(t *testing.T, o fixtureOptions) *fixture {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) }) // runs last
	f := &fixture{t: t, load: o.load}
	hub, err := report.NewHub(report.HubOptions{
		Compute:     f.compute,
		MinInterval: time.Millisecond,
		Heartbeat:   o.heartbeat,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.hub = hub
	f.src = &countingSource{Source: hub}
	hubCtx, stopHub := context.WithCancel(context.Background())
	hubDone := make(chan error, 1)
	go func() { hubDone <- hub.Run(hubCtx) }()
	t.Cleanup(func() {
		stopHub()
		if err := <-hubDone; err != nil {
			t.Errorf("hub.Run: %v", err)
		}
	})

	lis, dial := listen(t, o.tcp)
	f.stopServe = serve(t, lis, f.src, o.serve)
	t.Cleanup(func() {
		if err := f.stopServe(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})

	conn, err := grpc.NewClient(dial.target, append(dial.opts,
		grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	f.conn, f.client = conn, loadv1.NewLoadReporterClient(conn)
	return f
}

func (f *fixture) compute() report.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.load
}

// set changes the load that Compute returns and tells the Hub.
func (f *fixture) set(change func(*report.Snapshot)) {
	f.mu.Lock()
	s := f.load
	// Published snapshots share the old slices.
	s.Ranks = append([]report.Rank(nil), s.Ranks...)
	s.Requests.Ranks = append([]report.RankRequests(nil), s.Requests.Ranks...)
	change(&s)
	f.load = s
	f.mu.Unlock()
	f.hub.Notify()
}

type dialer struct {
	target string
	opts   []grpc.DialOption
}

func listen(t *testing.T, tcp bool) (net.Listener, dialer) {
	t.Helper()
	if tcp {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return lis, dialer{target: lis.Addr().String()}
	}
	lis := bufconn.Listen(1 << 20)
	return lis, dialer{target: "passthrough:///bufconn", opts: []grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
	}}
}

// serve runs Serve in a goroutine and returns the function that ends it
// and returns its result; that function may be called more than once.
func serve(t *testing.T, lis net.Listener, src loadgrpc.Source, opts loadgrpc.ServeOptions) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- loadgrpc.Serve(ctx, lis, src, opts) }()
	var (
		once sync.Once
		err  error
	)
	return func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(timeout):
				t.Fatalf("Serve did not return within %v of its context ending", timeout)
			}
		})
		return err
	}
}

// testContext is the test's context, bounded by timeout.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	bounded.Wait{Within: timeout, Every: time.Millisecond}.True(t, what, cond)
}

// sameSnapshot reports whether got, read back from the wire, is want in
// every field: the same load (SameLoad), Seq, At, Epoch, TTL and the
// engine's scrape record, which SameLoad leaves out. Times compare as
// instants.
func sameSnapshot(got, want *report.Snapshot) bool {
	ge, we := got.Engine, want.Engine
	return got.SameLoad(want) && got.Seq == want.Seq && got.At.Equal(want.At) &&
		got.Epoch == want.Epoch && got.TTL == want.TTL &&
		ge.Dialect == we.Dialect && ge.ScrapedAt.Equal(we.ScrapedAt) && ge.FailedScrapes == we.FailedScrapes &&
		ge.Error == we.Error && got.Busy == want.Busy && got.Stale == want.Stale && sameRequests(&got.Requests, &want.Requests) &&
		eqPtr(got.Thresholds.ActiveDecodeBlocks, want.Thresholds.ActiveDecodeBlocks) &&
		eqPtr(got.Thresholds.ActivePrefillTokens, want.Thresholds.ActivePrefillTokens) &&
		eqPtr(got.Thresholds.ActivePrefillTokensFrac, want.Thresholds.ActivePrefillTokensFrac) &&
		slices.Equal(got.Ranks, want.Ranks)
}

// sameRequests compares every admission count, rank by rank; nil and
// empty Ranks are the same.
func sameRequests(got, want *report.Requests) bool {
	return got.InFlight == want.InFlight && got.Queued == want.Queued && got.Limit == want.Limit &&
		got.QueueLimit == want.QueueLimit && got.WaitingLimit == want.WaitingLimit &&
		got.Prefilling == want.Prefilling && got.PrefillTokens == want.PrefillTokens &&
		got.QueuedTokens == want.QueuedTokens && got.PrefillTokenLimit == want.PrefillTokenLimit &&
		got.QueueTokenLimit == want.QueueTokenLimit && slices.Equal(got.Ranks, want.Ranks)
}

func eqPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func ptr[T any](v T) *T { return &v }

// oneRank is a plausible load with one rank, some counts unknown.
func oneRank() report.Snapshot {
	eng := func(n int64) report.Field { return report.Field{N: n, Source: report.SourceEngine} }
	return report.Snapshot{
		Engine:     report.Engine{Dialect: "vllm", ScrapedAt: time.Now().Round(0).UTC()},
		Requests:   report.Requests{InFlight: 2, Limit: 8, QueueLimit: 4, WaitingLimit: 3, Prefilling: 1},
		Thresholds: report.Thresholds{ActiveDecodeBlocks: ptr(0.85)},
		Ranks: []report.Rank{{
			KVTotalBlocks:      eng(4096),
			KVUsedBlocks:       eng(512),
			ActiveDecodeBlocks: report.Field{N: 300, Source: report.SourceSlotgate},
			BlockSize:          report.Field{N: 16, Source: report.SourceStatic},
		}},
	}
}
