package scrape

import (
	"context"
	"time"
)

// Exposition is the engine's Prometheus text of the latest successful
// scrape, kept with Options.KeepExposition, so that slotgate can answer an
// endpoint picker's GET /metrics without scraping the engine again.
type Exposition struct {
	// Text is the engine's answer as it came, never modified: readers may
	// keep it. Nil until a scrape kept one.
	Text []byte
	// At is when Text was read.
	At time.Time
	// FailedScrapes counts the consecutive scrapes that kept no text since;
	// 0 after a success.
	FailedScrapes int
	// Err is the last failure while FailedScrapes > 0.
	Err string
}

// Stale reports whether StaleAfter consecutive scrapes failed since Text
// was read: the rule EngineLoad.Stale follows.
func (e Exposition) Stale() bool { return e.FailedScrapes >= StaleAfter }

// Exposition returns the latest kept text. It is safe from any goroutine
// and costs one atomic load: the text is shared, never copied.
func (s *Scraper) Exposition() Exposition { return *s.text.Load() }

// keepExposition stores the text of the scrape that just succeeded: for
// vLLM the /metrics body it parsed, for SGLang a GET /metrics of its own
// (its load comes from /v1/loads, which is JSON).
func (s *Scraper) keepExposition(ctx context.Context) {
	if !s.keepText {
		return
	}
	switch s.active {
	case DialectVLLM:
		s.text.Store(&Exposition{Text: s.lastText, At: time.Now()})
	case DialectSGLang:
		body, err := s.get(ctx, pathMetrics, acceptText)
		if err != nil {
			s.textFailed(err)
			return
		}
		s.text.Store(&Exposition{Text: body, At: time.Now()})
	}
}

// textFailed counts a scrape that kept no text; the last text stays, with
// its time, for Stale to judge.
func (s *Scraper) textFailed(err error) {
	if !s.keepText {
		return
	}
	next := *s.text.Load()
	next.FailedScrapes++
	next.Err = err.Error()
	s.text.Store(&next)
}
