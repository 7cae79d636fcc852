package command

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/slotgate/slotgate/config"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/load/exposition"
	"github.com/slotgate/slotgate/load/scrape"
)

// engineMetricsPath is where endpoint pickers scrape a model server: the
// Inference Extension's and llm-d's metrics-data-source default path, on
// the pool's target port, which is slotgate's proxy port.
const engineMetricsPath = "/metrics"

// waitingGauges is, per dialect, the engine's waiting gauge that slotgate's
// queue is added to, and the label that names the DP rank of its series.
var waitingGauges = map[scrape.Dialect]exposition.Gauge{
	scrape.DialectVLLM:   {Family: "vllm:num_requests_waiting", RankLabel: "engine"},
	scrape.DialectSGLang: {Family: "sglang:num_queue_reqs", RankLabel: "dp_rank"},
	scrape.DialectTRTLLM: {Family: exposition.TRTLLMWaiting},
}

// engineMetrics answers /metrics on the proxy port with the engine's own
// metrics from the scraper's latest scrape, slotgate's queue added to the
// engine's waiting gauge and slotgate's pod gauges appended. It never
// reaches the engine (engines suffer from /metrics traffic) and never
// takes a slot; every other request goes to next, the proxy.
type engineMetrics struct {
	scraper *scrape.Scraper
	lims    *gate.Limiters
	next    http.Handler
}

// withEngineMetrics puts engineMetrics in front of the proxy with
// --serve-engine-metrics; without it /metrics stays whatever the proxy
// makes of it (a passthrough path by default).
func withEngineMetrics(cfg config.Config, lp *loadParts, lims *gate.Limiters, next http.Handler) http.Handler {
	if !cfg.ServeEngineMetrics {
		return next
	}
	return engineMetrics{scraper: lp.scraper, lims: lims, next: next}
}

func (h engineMetrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != engineMetricsPath {
		h.next.ServeHTTP(w, r)
		return
	}
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "slotgate serves /metrics on this port: GET or HEAD only", http.StatusMethodNotAllowed)
		return
	}
	body, err := h.render()
	if err != nil {
		// Never old figures in silence: a picker whose scrape fails keeps
		// its last values until its staleness threshold, and then no
		// longer counts the pod as having capacity.
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	hdr.Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// render builds the answer, or says why there is none: the dialect not
// yet detected, no scrape yet, or the last ones failed.
func (h engineMetrics) render() ([]byte, error) {
	el := h.scraper.Load()
	if el.Dialect == "" {
		return nil, notServed("the engine's metrics dialect is not detected yet", el.FailedScrapes, el.Err)
	}
	var text []byte
	if el.Dialect == scrape.DialectTRTLLM {
		// TensorRT-LLM's /metrics is JSON and drains on read: render the
		// gauges from the stats slotgate scraped.
		if el.At.IsZero() || el.Stale {
			return nil, staleness(el.At, el.FailedScrapes, el.Err)
		}
		text = exposition.TRTLLM(nil, el.Ranks)
	} else {
		ex := h.scraper.Exposition()
		if ex.Text == nil || ex.Stale() {
			return nil, staleness(ex.At, ex.FailedScrapes, ex.Err)
		}
		text = ex.Text
	}
	q := h.queue()
	out := make([]byte, 0, len(text)+1024)
	out = exposition.AddQueue(out, text, waitingGauges[el.Dialect], q)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return exposition.AppendPod(out, el.Ranks, q.Sum()), nil
}

// queue is slotgate's queue now: one figure for the engine, or one per
// rank with limits per rank.
func (h engineMetrics) queue() exposition.Queue {
	if ranks := h.lims.RankStats(); ranks != nil {
		q := exposition.Queue{ByRank: make([]int64, len(ranks))}
		for i, s := range ranks {
			q.ByRank[i] = int64(s.Waiting)
		}
		return q
	}
	return exposition.Queue{Total: int64(h.lims.Stats().Waiting)}
}

// staleness says why kept figures are not served: none yet, or stale.
func staleness(at time.Time, failed int, lastErr string) error {
	if at.IsZero() {
		return notServed("the engine has not been scraped successfully yet", failed, lastErr)
	}
	return notServed(fmt.Sprintf("the engine's metrics are stale: last scraped at %s", at.UTC().Format(time.RFC3339Nano)),
		failed, lastErr)
}

func notServed(why string, failed int, lastErr string) error {
	msg := "slotgate: engine metrics unavailable: " + why
	if failed > 0 {
		msg += fmt.Sprintf(" (%d failed scrapes since, last error: %s)", failed, lastErr)
	}
	return errors.New(msg)
}
