package loadgrpc_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/slotgate/slotgate/load/loadgrpc"
	"github.com/slotgate/slotgate/load/report"
	loadv1 "github.com/slotgate/slotgate/protos/slotgate/load/v1"
)

// never is a heartbeat that does not come during a test, so that every
// snapshot after the first is a change the test made.
const never = time.Hour

func TestGetLoad(t *testing.T) {
	f := newFixture(t, fixtureOptions{load: oneRank(), heartbeat: never})
	ctx := testContext(t)

	l, err := f.client.GetLoad(ctx, &loadv1.GetLoadRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := loadgrpc.FromProto(l), f.hub.Latest(); !sameSnapshot(&got, want) || got.Seq != 1 {
		t.Fatalf("GetLoad = %+v, want the Hub's first snapshot %+v", got, want)
	}

	f.set(func(s *report.Snapshot) { s.Requests.InFlight = 7 })
	waitFor(t, "GetLoad to return the change", func() bool {
		l, err := f.client.GetLoad(ctx, &loadv1.GetLoadRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return l.GetRequests().GetInFlight() == 7 && l.GetSeq() == 2
	})
}

// recv reads the next snapshot of a watch.
func recv(t *testing.T, w loadv1.LoadReporter_WatchLoadClient) report.Snapshot {
	t.Helper()
	l, err := w.Recv()
	if err != nil {
		t.Fatalf("WatchLoad Recv: %v", err)
	}
	return loadgrpc.FromProto(l)
}

func TestWatchLoadFirstAtOnce(t *testing.T) {
	// No heartbeat and no change: the first snapshot can only come from
	// WatchLoad sending the latest as soon as the watch starts.
	f := newFixture(t, fixtureOptions{load: oneRank(), heartbeat: never})
	w, err := f.client.WatchLoad(testContext(t), &loadv1.WatchLoadRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := recv(t, w); !sameSnapshot(&got, f.hub.Latest()) || got.Seq != 1 {
		t.Fatalf("first snapshot = %+v, want the Hub's latest %+v", got, f.hub.Latest())
	}
}

func TestWatchLoadChanges(t *testing.T) {
	f := newFixture(t, fixtureOptions{load: oneRank(), heartbeat: never})
	w, err := f.client.WatchLoad(testContext(t), &loadv1.WatchLoadRequest{})
	if err != nil {
		t.Fatal(err)
	}
	prev := recv(t, w)
	for _, n := range []int{3, 0, 5} {
		f.set(func(s *report.Snapshot) { s.Requests.Queued = n; s.Ranks[0].Busy = n == 5 })
		got := recv(t, w)
		if got.Seq != prev.Seq+1 || got.Requests.Queued != n || got.Ranks[0].Busy != (n == 5) {
			t.Fatalf("after setting Queued %d: got Seq %d Queued %d Busy %v, want Seq %d", n, got.Seq,
				got.Requests.Queued, got.Ranks[0].Busy, prev.Seq+1)
		}
		if want := f.compute(); !got.SameLoad(&want) {
			t.Fatalf("got %+v, want the load set %+v", got, want)
		}
		prev = got
	}
}

// TestWatchLoadPrefilling: W and the requests in prefill reach a watcher,
// engine-wide and per rank, and a change in prefill alone is news (the
// signal frontends route on).
func TestWatchLoadPrefilling(t *testing.T) {
	load := oneRank()
	load.Requests = report.Requests{InFlight: 3, Limit: 8, QueueLimit: 4, WaitingLimit: 4, Prefilling: 2,
		Ranks: []report.RankRequests{
			{DPRank: 0, InFlight: 2, Limit: 4, QueueLimit: 2, WaitingLimit: 2, Prefilling: 2},
			{DPRank: 1, InFlight: 1, Limit: 4, QueueLimit: 2, WaitingLimit: 2, Prefilling: 0},
		}}
	f := newFixture(t, fixtureOptions{load: load, heartbeat: never})
	w, err := f.client.WatchLoad(testContext(t), &loadv1.WatchLoadRequest{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := w.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if r := l.GetRequests(); r.GetWaitingLimit() != 4 || r.GetPrefilling() != 2 || len(r.GetRanks()) != 2 ||
		r.GetRanks()[0].GetPrefilling() != 2 || r.GetRanks()[1].GetWaitingLimit() != 2 {
		t.Fatalf("first load's requests = %v, want W 4, 2 in prefill, rank 0 with 2 of W 2", r)
	}
	// Rank 0's first request gets its first token and rank 1's starts
	// prefill: nothing but who is in prefill changes.
	f.set(func(s *report.Snapshot) {
		s.Requests.Ranks[0].Prefilling, s.Requests.Ranks[1].Prefilling = 1, 1
	})
	got := recv(t, w)
	if want := f.compute(); got.Seq != l.GetSeq()+1 || !sameRequests(&got.Requests, &want.Requests) {
		t.Fatalf("after the prefill change: Seq %d, requests %+v; want Seq %d, %+v", got.Seq, got.Requests,
			l.GetSeq()+1, want.Requests)
	}
}

func TestWatchLoadHeartbeat(t *testing.T) {
	f := newFixture(t, fixtureOptions{load: oneRank(), heartbeat: 50 * time.Millisecond})
	w, err := f.client.WatchLoad(testContext(t), &loadv1.WatchLoadRequest{})
	if err != nil {
		t.Fatal(err)
	}
	first := recv(t, w)
	prev := first
	for range 3 {
		got := recv(t, w) // nothing changes: only a heartbeat can bring it
		if got.Seq <= prev.Seq || !got.At.After(prev.At) || !got.SameLoad(&first) {
			t.Fatalf("heartbeat %+v after %+v: want a later Seq and At, the same load", got, prev)
		}
		prev = got
	}
}

func TestWatchLoadCancelEndsHandler(t *testing.T) {
	// No heartbeat: no failed Send can end the handler, only the cancel.
	f := newFixture(t, fixtureOptions{load: oneRank(), heartbeat: never})
	ctx, cancel := context.WithCancel(testContext(t))
	w, err := f.client.WatchLoad(ctx, &loadv1.WatchLoadRequest{})
	if err != nil {
		t.Fatal(err)
	}
	recv(t, w)
	if n := f.src.active.Load(); n != 1 {
		t.Fatalf("%d watches in progress, want 1", n)
	}
	cancel()
	if _, err := w.Recv(); status.Code(err) != codes.Canceled {
		t.Errorf("Recv after cancel: %v, want CANCELED", err)
	}
	// The connection stays open: only the client's cancel can end the
	// handler.
	waitFor(t, "the WatchLoad handler to end", func() bool { return f.src.active.Load() == 0 })
	if _, err := f.client.GetLoad(testContext(t), &loadv1.GetLoadRequest{}); err != nil {
		t.Errorf("GetLoad on the same connection: %v", err)
	}
}

// fakeSource serves a fixed snapshot, which may be nil; its Watch sends it
// once and waits for ctx.
type fakeSource struct{ snap *report.Snapshot }

func (s fakeSource) Latest() *report.Snapshot { return s.snap }

func (s fakeSource) Watch(ctx context.Context, f func(*report.Snapshot) error) error {
	if err := f(s.snap); err != nil {
		return err
	}
	<-ctx.Done()
	return ctx.Err()
}

func TestNewServiceNeedsSource(t *testing.T) {
	if svc, err := loadgrpc.NewService(nil); err == nil {
		t.Errorf("NewService(nil) = %v, nil; want an error", svc)
	}
}

func TestGetLoadWithoutSnapshot(t *testing.T) {
	svc, err := loadgrpc.NewService(fakeSource{})
	if err != nil {
		t.Fatal(err)
	}
	if l, err := svc.GetLoad(t.Context(), &loadv1.GetLoadRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("GetLoad with no snapshot = %v, %v; want UNAVAILABLE", l, err)
	}
}

// TestRegisterAndShutdown follows the pattern for a server of the
// caller's: Register, and Shutdown before GracefulStop.
func TestRegisterAndShutdown(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
	snap := oneRank()
	snap.Seq, snap.At = 1, time.Now()
	svc, err := loadgrpc.NewService(fakeSource{&snap})
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	svc.Register(srv)
	lis, d := listen(t, false)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	conn, err := grpc.NewClient(d.target, append(d.opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	client := loadv1.NewLoadReporterClient(conn)
	ctx := testContext(t)

	w, err := client.WatchLoad(ctx, &loadv1.WatchLoadRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := recv(t, w); !sameSnapshot(&got, &snap) {
		t.Fatalf("first snapshot %+v, want %+v", got, snap)
	}
	svc.Shutdown()
	wantShutdown(t, w)

	// A watch that starts after Shutdown ends at once, with no snapshot.
	w, err = client.WatchLoad(ctx, &loadv1.WatchLoadRequest{})
	if err != nil {
		t.Fatal(err)
	}
	wantShutdown(t, w)
	if _, err := client.GetLoad(ctx, &loadv1.GetLoadRequest{}); err != nil {
		t.Errorf("GetLoad after Shutdown: %v", err)
	}

	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(timeout):
		t.Fatalf("GracefulStop waited more than %v after Shutdown", timeout)
	}
}

// wantShutdown checks that the watch ends with Shutdown's status.
func wantShutdown(t *testing.T, w loadv1.LoadReporter_WatchLoadClient) {
	t.Helper()
	l, err := w.Recv()
	if err == nil {
		t.Fatalf("Recv after Shutdown = %v, want UNAVAILABLE", l)
	}
	if s := status.Convert(err); s.Code() != codes.Unavailable || !strings.Contains(s.Message(), "shutting down") ||
		errors.Is(err, io.EOF) {
		t.Fatalf("Recv after Shutdown: %v, want UNAVAILABLE, shutting down", err)
	}
}

// TestWatchLoadHubStopped: a Hub that stops publishing ends its watches
// (report.ErrStopped); the client must get UNAVAILABLE, a status it can
// retry, rather than UNKNOWN or silence.
func TestWatchLoadHubStopped(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
	hub, err := report.NewHub(report.HubOptions{Compute: oneRank, Heartbeat: never})
	if err != nil {
		t.Fatal(err)
	}
	hubCtx, stopHub := context.WithCancel(context.Background())
	hubDone := make(chan error, 1)
	go func() { hubDone <- hub.Run(hubCtx) }()
	t.Cleanup(func() { stopHub(); <-hubDone })
	lis, d := listen(t, false)
	stopServe := serve(t, lis, hub, loadgrpc.ServeOptions{})
	t.Cleanup(func() {
		if err := stopServe(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	conn, err := grpc.NewClient(d.target, append(d.opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })

	w, err := loadv1.NewLoadReporterClient(conn).WatchLoad(testContext(t), &loadv1.WatchLoadRequest{})
	if err != nil {
		t.Fatal(err)
	}
	recv(t, w)
	stopHub()
	if l, err := w.Recv(); status.Code(err) != codes.Unavailable {
		t.Fatalf("Recv after the hub stopped = %v, %v; want UNAVAILABLE", l, err)
	}
}
