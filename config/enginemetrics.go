package config

import (
	"strings"

	"github.com/slotgate/slotgate/internal/flagenv"
)

// serveEngineMetrics reads --serve-engine-metrics. auto (the default) is
// on whenever the engine is scraped, so that a picker scraping the proxy
// port sees slotgate's queue without a setting; it is on with the dialect
// auto too, before the engine is recognised (the answer is then 503 until
// the first scrape). On with the dialect none is refused: there is no
// scrape to answer from, and a second scrape per request is what engines
// suffer from.
func serveEngineMetrics(v *flagenv.Checker, s, dialect string) bool {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		return dialect != "none"
	}
	on := v.Bool("serve-engine-metrics", s)
	if on && dialect == "none" {
		v.Fail("serve-engine-metrics", s, "needs "+v.Name("engine-metrics-dialect")+
			" other than none: /metrics is answered from slotgate's own scrape of the engine")
		return false
	}
	return on
}
