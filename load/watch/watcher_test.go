package watch_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/slotgate/slotgate/load/report"
	"github.com/slotgate/slotgate/load/watch"
)

// TestExpiresWhenHeartbeatsStop is the stale-mark bug (Dynamo #12138): a
// sidecar that sends one snapshot and then nothing (a hung publisher) must
// not stay trusted, neither while its stream hangs nor when reconnecting
// replays the same snapshot.
func TestExpiresWhenHeartbeatsStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		t0 := time.Now()
		serveScript(t, n, "a:9000", func(_ int, w http.ResponseWriter) bool {
			return writeSSE(w, loadEvent(t, 1, t0, false)) // then silence, on every connection
		})
		w, logs := newWatcher(t, n, watch.Options{})
		mustAdd(t, w, "a", "http://a:9000")
		run(t, w)
		waitState(t, w, "a", watch.Fresh)
		if got := w.Eligible([]string{"a"}); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("Eligible = %v, want [a]", got)
		}
		last := status(t, w, "a")
		st := waitState(t, w, "a", watch.Expired)
		if got := time.Since(st.Received); got != watch.DefaultExpiry {
			t.Errorf("expired %v after the last snapshot, want %v", got, watch.DefaultExpiry)
		}
		if st.Snapshot.Seq != last.Snapshot.Seq || st.Eligible() {
			t.Errorf("Status = %+v, want the last snapshot (seq %d), not eligible", st, last.Snapshot.Seq)
		}
		if got := w.Eligible([]string{"a"}); len(got) != 0 {
			t.Errorf("Eligible = %v, want none", got)
		}

		// Reconnects replay the same snapshot: no new evidence.
		time.Sleep(30 * time.Second)
		if st := status(t, w, "a"); st.State != watch.Expired {
			t.Errorf("after 30s of replays: state %v, want expired", st.State)
		}
		if n.dialCount("a:9000") < 2 {
			t.Errorf("%d dials, want the silent stream dropped and reopened", n.dialCount("a:9000"))
		}
		if got := logs.count("WARN expired", "worker=a"); got != 1 {
			t.Errorf("logged expired %d times, want once; log:\n%s", got, logs)
		}
	})
}

func TestHeartbeatsKeepWorkerFresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		startSidecar(t, n, "a:9000", false)
		w, logs := newWatcher(t, n, watch.Options{})
		mustAdd(t, w, "a", "http://a:9000")
		run(t, w)
		first := waitState(t, w, "a", watch.Fresh)
		changed := w.Changed()

		time.Sleep(10 * time.Second)
		synctest.Wait()
		st := status(t, w, "a")
		if st.State != watch.Fresh || !st.Connected {
			t.Errorf("after 10s: %v, connected %v; want fresh and connected", st.State, st.Connected)
		}
		if got := st.Snapshot.Seq - first.Snapshot.Seq; got < 9 {
			t.Errorf("seq advanced by %d in 10s, want a heartbeat a second", got)
		}
		select {
		case <-changed:
			t.Errorf("Changed fired for heartbeats")
		default:
		}
		if got := logs.count("INFO connected", "worker=a"); got != 1 {
			t.Errorf("logged connected %d times, want once; log:\n%s", got, logs)
		}
	})
}

// TestSidecarRestartResetsSeq: a restarted sidecar counts from 1 again, and
// the watcher takes its word.
func TestSidecarRestartResetsSeq(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		sc := startSidecar(t, n, "a:9000", false)
		w, logs := newWatcher(t, n, watch.Options{})
		mustAdd(t, w, "a", "http://a:9000")
		run(t, w)
		waitState(t, w, "a", watch.Fresh)
		time.Sleep(5 * time.Second)
		before := status(t, w, "a").Snapshot.Seq
		if before < 5 {
			t.Fatalf("seq %d after 5s, want at least 5", before)
		}

		sc.close()
		startSidecar(t, n, "a:9000", false)
		time.Sleep(time.Second)
		synctest.Wait()
		st := status(t, w, "a")
		if st.State != watch.Fresh || st.Snapshot.Seq >= before || st.Snapshot.Seq > 2 {
			t.Errorf("after restart: %v seq %d; want fresh, seq 1 or 2 (was %d)", st.State, st.Snapshot.Seq, before)
		}
		if got := logs.count("INFO sidecar restarted", "worker=a"); got != 1 {
			t.Errorf("logged the restart %d times, want once; log:\n%s", got, logs)
		}
		if got := logs.count("WARN disconnected", "worker=a"); got != 1 {
			t.Errorf("logged disconnected %d times, want once; log:\n%s", got, logs)
		}
	})
}

// TestNewestSeqWins: on one connection an older or repeated snapshot is
// dropped; the first of a new connection may be older (a restart).
func TestNewestSeqWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		t0 := time.Now()
		serveScript(t, n, "a:9000", func(conn int, w http.ResponseWriter) bool {
			if conn == 0 {
				return writeSSE(w, loadEvent(t, 5, t0, false), loadEvent(t, 3, t0, true), loadEvent(t, 5, t0, true))
			}
			return writeSSE(w, loadEvent(t, 2, time.Now(), true))
		})
		w, _ := newWatcher(t, n, watch.Options{})
		mustAdd(t, w, "a", "http://a:9000")
		run(t, w)
		waitState(t, w, "a", watch.Fresh)
		synctest.Wait()
		if st := status(t, w, "a"); st.Snapshot.Seq != 5 || st.Busy {
			t.Errorf("on one connection: seq %d busy %v, want seq 5 not busy", st.Snapshot.Seq, st.Busy)
		}
		// Silent: dropped at expiry, and the next connection restarts at 2.
		waitFor(t, w, "busy", func() bool { return slices.Equal(w.Busy(), []string{"a"}) })
		if st := status(t, w, "a"); st.Snapshot.Seq != 2 || st.State != watch.Fresh {
			t.Errorf("after reconnect: %v seq %d, want fresh seq 2", st.State, st.Snapshot.Seq)
		}
	})
}

func TestBusyFlipPropagates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		sc := startSidecar(t, n, "a:9000", false)
		w, _ := newWatcher(t, n, watch.Options{})
		mustAdd(t, w, "a", "http://a:9000")
		run(t, w)
		waitState(t, w, "a", watch.Fresh)
		time.Sleep(time.Second / 2)

		for _, busy := range []bool{true, false, true} {
			start := time.Now()
			sc.setBusy(busy)
			waitFor(t, w, "busy flip", func() bool { return status(t, w, "a").Busy == busy })
			if took := time.Since(start); took > report.MinInterval {
				t.Errorf("busy=%v took %v to arrive, want at most %v", busy, took, report.MinInterval)
			}
			wantBusy, wantEligible := []string(nil), []string{"a"}
			if busy {
				wantBusy, wantEligible = []string{"a"}, []string{}
			}
			if got := w.Busy(); !slices.Equal(got, wantBusy) {
				t.Errorf("busy=%v: Busy = %v, want %v", busy, got, wantBusy)
			}
			if got := w.Eligible([]string{"a"}); !slices.Equal(got, wantEligible) {
				t.Errorf("busy=%v: Eligible = %v, want %v", busy, got, wantEligible)
			}
		}
	})
}

func TestEligibleOrderAndFiltering(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		w, _ := newWatcher(t, n, watch.Options{})
		for _, name := range []string{"a", "b", "c"} {
			startSidecar(t, n, name+":9000", false)
		}
		startSidecar(t, n, "busy:9000", true)
		expired := startSidecar(t, n, "expired:9000", true)
		// Some added before Run, some while it runs.
		for _, name := range []string{"a", "busy", "unknown"} {
			mustAdd(t, w, name, "http://"+name+":9000")
		}
		run(t, w)
		for _, name := range []string{"b", "c", "expired"} {
			mustAdd(t, w, name, "http://"+name+":9000")
		}
		for _, name := range []string{"a", "b", "c", "busy", "expired"} {
			waitState(t, w, name, watch.Fresh)
		}
		expired.stopHeartbeats()
		waitState(t, w, "expired", watch.Expired)

		for _, tc := range []struct {
			candidates, want []string
		}{
			{[]string{"unwatched", "c", "busy", "a", "unknown", "expired", "b", "a"}, []string{"c", "a", "b", "a"}},
			{[]string{"b", "a"}, []string{"b", "a"}},
			{[]string{"busy", "expired", "unknown", "unwatched"}, []string{}},
			{nil, []string{}},
		} {
			got := w.Eligible(tc.candidates)
			if got == nil || !slices.Equal(got, tc.want) {
				t.Errorf("Eligible(%q) = %#v, want %q", tc.candidates, got, tc.want)
			}
		}
		if got := w.Busy(); !slices.Equal(got, []string{"busy"}) {
			t.Errorf("Busy = %q, want [busy]: an expired busy worker is not in the busy set", got)
		}
		for name, want := range map[string]watch.Status{
			"a":       {State: watch.Fresh},
			"busy":    {State: watch.Fresh, Busy: true},
			"expired": {State: watch.Expired, Busy: true},
			"unknown": {State: watch.Unknown},
		} {
			st := status(t, w, name)
			if st.State != want.State || st.Busy != want.Busy || st.Eligible() != (name == "a") {
				t.Errorf("Status(%s) = %v busy=%v eligible=%v, want %v busy=%v", name, st.State, st.Busy, st.Eligible(),
					want.State, want.Busy)
			}
		}
		if _, ok := w.Status("unwatched"); ok {
			t.Errorf("Status(unwatched): ok, want not watched")
		}
		if snap, state, ok := w.Load("unknown"); !ok || snap != nil || state != watch.Unknown {
			t.Errorf("Load(unknown) = %v, %v, %v; want nil, unknown, true", snap, state, ok)
		}
	})
}

// TestStreamErrors: whatever breaks a stream is logged once, and the
// watcher reconnects.
func TestStreamErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bad     func(t *testing.T, w http.ResponseWriter) (keepOpen bool)
		wantLog string
	}{
		{"line over 1 MiB", func(t *testing.T, w http.ResponseWriter) bool {
			return writeSSE(w, ": "+strings.Repeat("x", 1<<20)+"\n")
		}, "over the bound"},
		{"event data over 1 MiB", func(t *testing.T, w http.ResponseWriter) bool {
			chunk := "data: " + strings.Repeat("x", 1<<19) + "\n"
			return writeSSE(w, "event: load\n", chunk, chunk, chunk)
		}, "over the bound"},
		{"malformed snapshot", func(t *testing.T, w http.ResponseWriter) bool {
			return writeSSE(w, "event: load\nid: 1\ndata: {\"seq\":\n\n")
		}, "decode snapshot"},
		{"wrong snapshot type", func(t *testing.T, w http.ResponseWriter) bool {
			return writeSSE(w, "event: load\nid: 1\ndata: {\"seq\":\"one\"}\n\n")
		}, "decode snapshot"},
		{"not an event stream", func(t *testing.T, w http.ResponseWriter) bool {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("{}"))
			return true
		}, "content type"},
		{"not found", func(t *testing.T, w http.ResponseWriter) bool {
			http.NotFound(w, nil)
			return false
		}, "404"},
		{"stream ended", func(t *testing.T, w http.ResponseWriter) bool {
			writeSSE(w, ": bye\n")
			return false
		}, "stream ended"},
		{"connection cut", func(t *testing.T, w http.ResponseWriter) bool {
			writeSSE(w, ": bye\n")
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		}, "EOF"},
		{"silent", func(t *testing.T, w http.ResponseWriter) bool {
			return writeSSE(w, ": nothing to say\n")
		}, "no new snapshot for 3s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := newPipeNet()
				serveScript(t, n, "a:9000", func(conn int, w http.ResponseWriter) bool {
					if conn == 0 {
						return tc.bad(t, w)
					}
					return writeSSE(w, loadEvent(t, 1, time.Now(), false))
				})
				w, logs := newWatcher(t, n, watch.Options{})
				mustAdd(t, w, "a", "http://a:9000")
				run(t, w)
				waitState(t, w, "a", watch.Fresh)
				if got := logs.count("WARN unreachable", "worker=a", tc.wantLog); got != 1 {
					t.Errorf("logged %d unreachable with %q, want 1; log:\n%s", got, tc.wantLog, logs)
				}
			})
		})
	}
}

// TestOtherEventsIgnored: comments, retry and events not named load pass
// by without harm.
func TestOtherEventsIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		serveScript(t, n, "a:9000", func(conn int, w http.ResponseWriter) bool {
			return writeSSE(w, ": hello\n\n", "retry: 250\n", "event: other\ndata: {not json\n\n", "data: {\n\n",
				loadEvent(t, 7, time.Now(), true))
		})
		w, logs := newWatcher(t, n, watch.Options{})
		mustAdd(t, w, "a", "http://a:9000")
		run(t, w)
		st := waitState(t, w, "a", watch.Fresh)
		if st.Snapshot.Seq != 7 || !st.Busy {
			t.Errorf("snapshot seq %d busy %v, want seq 7 busy", st.Snapshot.Seq, st.Busy)
		}
		if got := logs.count("WARN"); got != 0 {
			t.Errorf("%d warnings, want none; log:\n%s", got, logs)
		}
	})
}

// TestLogsEachChangeOnce: an unreachable sidecar is logged once however
// many retries fail; the retries back off, and start again from
// BackoffMin after a connection that delivered.
func TestLogsEachChangeOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newPipeNet()
		w, logs := newWatcher(t, n, watch.Options{})
		mustAdd(t, w, "a", "http://a:9000")
		run(t, w)
		time.Sleep(time.Minute)
		// Waits from [d/2, d], d = 0.1, 0.2, … 3.2 s, then 5 s: between 17
		// and 30 attempts in a minute.
		if got := n.dialCount("a:9000"); got < 17 || got > 30 {
			t.Errorf("%d attempts in a minute, want 17 to 30", got)
		}

		sc := startSidecar(t, n, "a:9000", false)
		waitState(t, w, "a", watch.Fresh)
		time.Sleep(2 * time.Second) // heartbeats: Seq 3 at least
		// A restart: the first reconnect comes within BackoffMin.
		sc.close()
		start := time.Now()
		sc = startSidecar(t, n, "a:9000", true)
		waitFor(t, w, "a busy", func() bool { return status(t, w, "a").Busy })
		if took := time.Since(start); took > watch.DefaultBackoffMin {
			t.Errorf("reconnected after %v, want at most %v", took, watch.DefaultBackoffMin)
		}
		sc.close()
		waitState(t, w, "a", watch.Expired)
		time.Sleep(time.Minute)

		for _, tc := range []struct {
			prefix string
			want   int
		}{
			{"WARN unreachable", 2}, // before the sidecar, and after it
			{"INFO connected", 2},
			{"INFO sidecar restarted", 1},
			{"WARN disconnected", 2},
			{"WARN expired", 1},
		} {
			if got := logs.count(tc.prefix, "worker=a"); got != tc.want {
				t.Errorf("%q logged %d times, want %d", tc.prefix, got, tc.want)
			}
		}
		if t.Failed() {
			t.Logf("log:\n%s", logs)
		}
	})
}

func TestRemove(t *testing.T) {
	t.Run("before Run", func(t *testing.T) {
		w, err := watch.New(watch.Options{})
		if err != nil {
			t.Fatal(err)
		}
		mustAdd(t, w, "a", "http://127.0.0.1:1")
		w.Remove("a")
		w.Remove("never added")
		if _, ok := w.Status("a"); ok {
			t.Errorf("Status(a) after Remove: ok")
		}
		mustAdd(t, w, "a", "http://127.0.0.1:1") // the name is free again
	})
	t.Run("fires Changed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			n := newPipeNet()
			startSidecar(t, n, "a:9000", true)
			w, _ := newWatcher(t, n, watch.Options{})
			mustAdd(t, w, "a", "http://a:9000")
			run(t, w)
			waitState(t, w, "a", watch.Fresh)
			ch := w.Changed()
			w.Remove("a")
			select {
			case <-ch:
			default:
				t.Errorf("Remove did not fire Changed")
			}
			if got := w.Busy(); len(got) != 0 {
				t.Errorf("Busy after Remove = %v, want none", got)
			}
		})
	})
	// On the real network, so that goleak sees the connection's goroutines.
	t.Run("stops the goroutine", func(t *testing.T) {
		sidecar := realSidecar(t)
		w, err := watch.New(watch.Options{})
		if err != nil {
			t.Fatal(err)
		}
		run(t, w)
		ignore := goleak.IgnoreCurrent()
		mustAdd(t, w, "a", sidecar.URL)
		waitState(t, w, "a", watch.Fresh)
		w.Remove("a")
		goleak.VerifyNone(t, ignore)
	})
}

// TestRunEnds: Run returns nil when its context ends, with every goroutine
// it started gone, the streams' included; a second Run fails.
func TestRunEnds(t *testing.T) {
	sidecar := realSidecar(t)
	ignore := goleak.IgnoreCurrent()
	w, err := watch.New(watch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, w, "a", sidecar.URL)
	mustAdd(t, w, "b", sidecar.URL)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	waitState(t, w, "a", watch.Fresh)
	waitState(t, w, "b", watch.Fresh)
	if err := w.Run(ctx); err == nil {
		t.Errorf("second Run = nil, want an error")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	goleak.VerifyNone(t, ignore)
	// Add after Run records the worker, which stays Unknown.
	mustAdd(t, w, "c", sidecar.URL)
	if st := status(t, w, "c"); st.State != watch.Unknown {
		t.Errorf("worker added after Run: %v, want unknown", st.State)
	}
}

// realSidecar serves a sidecar's load endpoints on 127.0.0.1 until the
// test ends.
func realSidecar(t *testing.T) *httptest.Server {
	hub, err := report.NewHub(report.HubOptions{Compute: func() report.Snapshot {
		return report.Snapshot{Ranks: []report.Rank{{}}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hub.Run(ctx)
	}()
	srv := httptest.NewServer(report.NewHandler(hub))
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-done
	})
	return srv
}

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts watch.Options
		want string // in the error; "" for none
	}{
		{"defaults", watch.Options{}, ""},
		{"negative expiry", watch.Options{Expiry: -1}, "negative"},
		{"negative backoff", watch.Options{BackoffMin: -1}, "negative"},
		{"min over max", watch.Options{BackoffMin: 6 * time.Second}, "over BackoffMax"},
		{"client timeout", watch.Options{Client: &http.Client{Timeout: time.Minute}}, "Timeout"},
		{"all at once", watch.Options{Expiry: -1, BackoffMin: 2, BackoffMax: 1, Client: &http.Client{Timeout: 1}},
			"negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := watch.New(tc.opts)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("New = %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("New = %v, want an error with %q", err, tc.want)
			case err == nil && w == nil:
				t.Errorf("New = nil, nil")
			}
			if tc.name == "all at once" && (err == nil || strings.Count(err.Error(), "\n") != 2) {
				t.Errorf("New = %v, want the three problems", err)
			}
		})
	}
}

func TestAddValidates(t *testing.T) {
	w, err := watch.New(watch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, w, "a", "http://10.0.0.1:9090")
	mustAdd(t, w, "b", "https://sidecar.example/admin")
	for _, tc := range []struct{ name, url string }{
		{"", "http://10.0.0.1:9090"},
		{"c", "10.0.0.1:9090"},
		{"c", "ftp://10.0.0.1"},
		{"c", "http://"},
		{"c", "http://[::1"},
	} {
		if err := w.Add(tc.name, tc.url); err == nil {
			t.Errorf("Add(%q, %q) = nil, want an error", tc.name, tc.url)
		}
	}
	if err := w.Add("a", "http://10.0.0.2:9090"); !errors.Is(err, watch.ErrExists) {
		t.Errorf("Add of a name again = %v, want ErrExists", err)
	}
}
