package sim

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// inFlightCounts is the engine's count in flight and its peak.
func inFlightCounts(e *Engine) counts {
	st := e.Stats()
	return counts{st.InFlight, st.InFlightMax}
}

// A request counts from trackInFlight until its end is called or its
// context is done, whichever comes first, and leaves exactly once; the
// peak is exact. Each action acts on request i, all in one bubble, so the
// context's AfterFunc has run when the counts are checked.
func TestTrackInFlight(t *testing.T) {
	type action struct {
		op   string // "begin", "end" or "cancel"
		i    int
		want counts
	}
	tests := []struct {
		name    string
		actions []action
	}{
		{"end, then the context", []action{
			{"begin", 0, counts{1, 1}}, {"end", 0, counts{0, 1}}, {"cancel", 0, counts{0, 1}},
		}},
		{"the context, then end", []action{
			{"begin", 0, counts{1, 1}}, {"cancel", 0, counts{0, 1}}, {"end", 0, counts{0, 1}},
		}},
		{"end twice", []action{
			{"begin", 0, counts{1, 1}}, {"begin", 1, counts{2, 2}}, {"end", 0, counts{1, 2}}, {"end", 0, counts{1, 2}},
		}},
		{"peak", []action{
			{"begin", 0, counts{1, 1}}, {"begin", 1, counts{2, 2}}, {"begin", 2, counts{3, 3}}, {"cancel", 1, counts{2, 3}},
			{"begin", 3, counts{3, 3}}, {"begin", 4, counts{4, 4}}, {"cancel", 0, counts{3, 4}}, {"end", 2, counts{2, 4}},
			{"end", 3, counts{1, 4}}, {"end", 4, counts{0, 4}}, {"end", 1, counts{0, 4}}, {"end", 0, counts{0, 4}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEngine(t, Options{})
				ends := map[int]func(){}
				cancels := map[int]context.CancelFunc{}
				for n, a := range tt.actions {
					switch a.op {
					case "begin":
						ctx, cancel := context.WithCancel(t.Context())
						defer cancel()
						cancels[a.i] = cancel
						ends[a.i] = e.trackInFlight(ctx)
					case "end":
						ends[a.i]()
					case "cancel":
						cancels[a.i]()
					}
					synctest.Wait()
					if got := inFlightCounts(e); got != a.want {
						t.Fatalf("after action %d (%s %d): %d in flight, peak %d; want %d, %d", n, a.op, a.i, got.n, got.max, a.want.n, a.want.max)
					}
				}
			})
		})
	}
}

// Over the network, on one engine whose loops do not run (requests wait
// for ever): streamed and non-streamed HTTP requests and a gRPC Generate
// all count in flight, as OwnMetricsPath shows; each client that goes away
// stops counting, and the peak stays.
func TestInFlightOverNetwork(t *testing.T) {
	s := startServer(t, Options{}, false, ServerOptions{})
	g := serveGRPC(t, s.engine)
	var cancels []context.CancelFunc
	for _, stream := range []bool{true, true, false} {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		cancels = append(cancels, cancel)
		body := `{"prompt":"hello","max_tokens":4,"stream":` + map[bool]string{true: "true", false: "false"}[stream] + `}`
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/v1/completions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		// A streamed answer's headers come at once, and its body is kept
		// open until cancel; a non-streamed one blocks Do until cancel.
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := s.client.Do(req); err == nil {
				<-ctx.Done()
				resp.Body.Close()
			}
		}()
		t.Cleanup(func() { cancel(); <-done })
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cancels = append(cancels, cancel)
	if _, err := g.client.Generate(ctx, genReq(promptOf(4), 4, true, true)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "4 requests in flight", func() bool { return inFlightCounts(s.engine) == counts{4, 4} })
	checkSeries(t, scrapeURL(t, s, OwnMetricsPath), []wantSeries{
		{MetricInFlight, nil, dto.MetricType_GAUGE, 4},
		{MetricInFlightMax, nil, dto.MetricType_GAUGE, 4},
	})
	for i, cancel := range cancels {
		cancel()
		want := counts{3 - i, 4}
		eventually(t, "a client that left to stop counting", func() bool { return inFlightCounts(s.engine) == want })
	}
	checkSeries(t, scrapeURL(t, s, OwnMetricsPath), []wantSeries{
		{MetricInFlight, nil, dto.MetricType_GAUGE, 0},
		{MetricInFlightMax, nil, dto.MetricType_GAUGE, 4},
	})
}

// scrapeURL parses GET path of a running server as Prometheus text.
func scrapeURL(t *testing.T, s *testServer, path string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := s.client.Get(s.url + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return mfs
}
