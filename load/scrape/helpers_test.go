package scrape_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/slotgate/slotgate/load"
)

// e and st are engine and static values.
func e(n int64) load.Value  { return load.Value{N: n, Source: load.SourceEngine} }
func st(n int64) load.Value { return load.Value{N: n, Source: load.SourceStatic} }

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkSane fails unless ranks keep the parsers' promises.
func checkSane(t *testing.T, ranks []load.Rank) {
	t.Helper()
	for i, r := range ranks {
		if i > 0 && ranks[i-1].DPRank >= r.DPRank {
			t.Fatalf("ranks not sorted and unique: %+v", ranks)
		}
		for _, v := range []load.Value{r.KVTotalBlocks, r.KVUsedBlocks, r.NumRequestsRunning, r.NumRequestsWaiting,
			r.ActivePrefillTokens, r.MaxNumBatchedTokens, r.BlockSize} {
			if v.Known() && v.N < 0 {
				t.Fatalf("negative value in %+v", r)
			}
		}
		if r.KVUsedBlocks.Known() && r.KVTotalBlocks.Known() && r.KVUsedBlocks.N > r.KVTotalBlocks.N {
			t.Fatalf("used > total in %+v", r)
		}
		if r.ActiveDecodeBlocks.Known() || r.Flights.Known() {
			t.Fatalf("a value only slotgate knows is set in %+v", r)
		}
	}
}

// handlerTransport serves requests with a handler, in memory: no network,
// so it works inside a testing/synctest bubble.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

// script answers GET path with the next of its bodies; failing makes every
// request fail. Safe for concurrent use.
type script struct {
	mu      sync.Mutex
	bodies  map[string][]string
	failing bool
}

func (sc *script) setFailing(f bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.failing = f
}

func (sc *script) push(path string, bodies ...string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.bodies == nil {
		sc.bodies = map[string][]string{}
	}
	sc.bodies[path] = append(sc.bodies[path], bodies...)
}

func (sc *script) RoundTrip(req *http.Request) (*http.Response, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.failing {
		return nil, errors.New("connection refused (scripted)")
	}
	q := sc.bodies[req.URL.Path]
	rec := httptest.NewRecorder()
	if len(q) == 0 {
		http.NotFound(rec, req)
		return rec.Result(), nil
	}
	if len(q) > 1 {
		sc.bodies[req.URL.Path] = q[1:]
	}
	rec.WriteString(q[0])
	return rec.Result(), nil
}

// logs collects slog records' messages.
type logs struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logs) WithGroup(string) slog.Handler      { return l }

func (l *logs) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.Contains(m, substr) {
			n++
		}
	}
	return n
}

func mustURL(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// body reads a testdata file as a string.
func body(t testing.TB, name string) string { return string(readFile(t, name)) }
