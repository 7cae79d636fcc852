package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotgate/slotgate/load/report"
)

// loadCollector exposes the latest load snapshot, read once per scrape:
// one series per data-parallel rank for each count the snapshot knows (an
// unknown count has no series, rather than a false 0), and the worker's
// busy and stale states.
type loadCollector struct {
	latest func() *report.Snapshot

	ranks                       []rankGauge
	busy, stale, scrapeFailures *prometheus.Desc
	lastScrape                  *prometheus.Desc
}

// rankGauge is one per-rank gauge and the field of a report.Rank it shows.
type rankGauge struct {
	desc  *prometheus.Desc
	field func(*report.Rank) report.Field
}

func newLoadCollector(latest func() *report.Snapshot) *loadCollector {
	rank := []string{"dp_rank"}
	gauge := func(name, help string, field func(*report.Rank) report.Field) rankGauge {
		return rankGauge{desc: prometheus.NewDesc("slotgate_worker_"+name, help, rank, nil), field: field}
	}
	return &loadCollector{
		latest: latest,
		ranks: []rankGauge{
			gauge("kv_total_blocks", "KV cache capacity of the rank in blocks, from the engine or --kv-total-blocks.",
				func(r *report.Rank) report.Field { return r.KVTotalBlocks }),
			gauge("kv_used_blocks", "KV cache blocks in use on the rank, as the engine reports them.",
				func(r *report.Rank) report.Field { return r.KVUsedBlocks }),
			gauge("active_decode_blocks", "KV blocks the requests slotgate forwarded fill, by slotgate's count of their tokens.",
				func(r *report.Rank) report.Field { return r.ActiveDecodeBlocks }),
			gauge("active_prefill_tokens", "Prompt tokens waiting for their first generated token: the engine's when it exports them, else slotgate's estimate.",
				func(r *report.Rank) report.Field { return r.ActivePrefillTokens }),
			gauge("max_num_batched_tokens", "Token budget of one engine step on the rank, from the engine or --max-num-batched-tokens.",
				func(r *report.Rank) report.Field { return r.MaxNumBatchedTokens }),
		},
		busy: prometheus.NewDesc("slotgate_worker_busy",
			"1 while the rank is busy under the busy thresholds (any check true); the worker is busy when every rank is.", rank, nil),
		stale: prometheus.NewDesc("slotgate_engine_metrics_stale",
			"1 once the engine's load metrics failed 3 scrapes in a row; its values are then those of the last success.", nil, nil),
		scrapeFailures: prometheus.NewDesc("slotgate_engine_metrics_failed_scrapes",
			"Consecutive failed scrapes of the engine's load metrics; 0 after a success.", nil, nil),
		lastScrape: prometheus.NewDesc("slotgate_engine_metrics_last_success_timestamp_seconds",
			"Unix time of the last successful scrape of the engine's load metrics; absent before the first.", nil, nil),
	}
}

func (c *loadCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range c.ranks {
		ch <- g.desc
	}
	ch <- c.busy
	ch <- c.stale
	ch <- c.scrapeFailures
	ch <- c.lastScrape
}

func (c *loadCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.latest()
	for i := range s.Ranks {
		r := &s.Ranks[i]
		id := strconv.Itoa(r.DPRank)
		for _, g := range c.ranks {
			if f := g.field(r); f.Known() {
				ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(f.N), id)
			}
		}
		ch <- prometheus.MustNewConstMetric(c.busy, prometheus.GaugeValue, b2f(r.Busy), id)
	}
	ch <- prometheus.MustNewConstMetric(c.stale, prometheus.GaugeValue, b2f(s.Stale))
	ch <- prometheus.MustNewConstMetric(c.scrapeFailures, prometheus.GaugeValue, float64(s.Engine.FailedScrapes))
	if !s.Engine.ScrapedAt.IsZero() {
		ch <- prometheus.MustNewConstMetric(c.lastScrape, prometheus.GaugeValue, float64(s.Engine.ScrapedAt.UnixNano())/1e9)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
