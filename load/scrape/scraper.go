package scrape

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"
	"time"

	"github.com/slotgate/slotgate/load"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultInterval = 200 * time.Millisecond
	DefaultTimeout  = time.Second
)

// StaleAfter is how many consecutive failed scrapes make a snapshot stale.
const StaleAfter = 3

// Options configures a Scraper.
type Options struct {
	// EngineURL is the engine's base URL (scheme, host, optional path
	// prefix); the dialect's paths are joined to it. Required unless
	// Dialect is DialectNone.
	EngineURL *url.URL
	// Dialect is how the engine reports its load; empty means DialectAuto.
	Dialect Dialect
	// Interval is the time between scrapes; 0 means DefaultInterval.
	Interval time.Duration
	// Timeout bounds one scrape (all its requests); 0 means DefaultTimeout.
	Timeout time.Duration
	// Client sends the requests; nil means a client with a transport of
	// its own that never goes through an environment proxy. slotgate
	// gives the engine client's (engine.Client.HTTPClient).
	Client *http.Client
	// Overrides fill what the engine does not export.
	Overrides Overrides
	// OnChange, when set, is called from Run's goroutine after each scrape
	// stored a new snapshot, successful or not (a success moves At, a
	// failure counts itself), so the snapshot changed even when the
	// engine's figures did not; the reader decides whether that is news.
	// It must not block: it runs on the scrape loop.
	OnChange func()
	// KeepExposition keeps the engine's Prometheus text of each successful
	// scrape for Exposition: vLLM's /metrics, which the scrape reads
	// anyway, and SGLang's /metrics, fetched after /v1/loads on each
	// scrape for it. TensorRT-LLM has no text to keep (its /metrics is
	// JSON).
	KeepExposition bool
	// Logger receives the state changes: the dialect detected, the
	// snapshot turning stale, and fresh again; nil means none. Nothing is
	// logged per scrape.
	Logger *slog.Logger
}

// Scraper polls the engine's load endpoint and keeps the latest snapshot.
// Run does the polling; Load may be called from any goroutine at any time.
type Scraper struct {
	base      *url.URL
	dialect   Dialect // as configured
	interval  time.Duration
	timeout   time.Duration
	client    *http.Client
	overrides Overrides
	log       *slog.Logger
	onChange  func()
	keepText  bool

	snap    atomic.Pointer[EngineLoad] // never nil; immutable once stored
	text    atomic.Pointer[Exposition] // never nil; immutable once stored
	running atomic.Bool

	// Owned by Run's goroutine.
	active     Dialect     // the dialect in use; "" until auto detection succeeds
	trtRanks   []load.Rank // TensorRT-LLM: the last values of each rank seen
	sglang     SGLangInfo  // SGLang: page size and max prefill tokens
	sglangDone bool        // SGLang: the info was asked for once
	lastText   []byte      // vLLM: the body of the last /metrics read
}

// New validates opts, applies the defaults, and returns a Scraper
// whose snapshot holds the static values only. It starts nothing. It
// fails with every problem in opts, joined.
func New(opts Options) (*Scraper, error) {
	if opts.Dialect == "" {
		opts.Dialect = DialectAuto
	}
	if err := validate(opts); err != nil {
		return nil, err
	}
	s := &Scraper{
		base: opts.EngineURL, dialect: opts.Dialect, interval: cmpOr(opts.Interval, DefaultInterval),
		timeout: cmpOr(opts.Timeout, DefaultTimeout), client: opts.Client, overrides: opts.Overrides, log: opts.Logger,
		onChange: opts.OnChange, keepText: opts.KeepExposition,
	}
	if s.onChange == nil {
		s.onChange = func() {}
	}
	if s.client == nil {
		// A Transport of its own, not http.DefaultTransport: the engine
		// is beside us, never behind an environment proxy.
		s.client = &http.Client{Transport: &http.Transport{}}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.dialect != DialectAuto {
		s.active = s.dialect
	}
	// Until the engine reports its ranks (with DialectNone, for good) there
	// is at least rank 0, carrying the static values.
	dp := max(opts.Overrides.DataParallelSize, 1)
	s.snap.Store(&EngineLoad{Dialect: s.active, Ranks: s.overrides.apply(nil, dp)})
	s.text.Store(&Exposition{})
	return s, nil
}

func validate(opts Options) error {
	var errs []error
	if !slices.Contains(Dialects(), opts.Dialect) {
		errs = append(errs, fmt.Errorf("scrape: unknown dialect %q (want one of %v)", opts.Dialect, Dialects()))
	}
	if opts.Dialect != DialectNone {
		if u := opts.EngineURL; u == nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("scrape: EngineURL must be an http or https URL with a host, got %v", u))
		}
	}
	if opts.Interval < 0 || opts.Timeout < 0 {
		errs = append(errs, fmt.Errorf("scrape: Interval and Timeout must not be negative, got %v and %v", opts.Interval, opts.Timeout))
	}
	if err := opts.Overrides.validate(); err != nil {
		errs = append(errs, fmt.Errorf("scrape: %w", err))
	}
	return errors.Join(errs...)
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Load returns the latest snapshot, a copy the caller may keep and modify.
func (s *Scraper) Load() EngineLoad { return s.snap.Load().clone() }

// Run scrapes the engine at once and then every Interval until ctx ends,
// and returns nil then. Each scrape is bounded by Timeout and ends with
// ctx. With DialectAuto, each scrape first probes the engine until one
// dialect answers; that one is kept. With DialectNone, Run only waits for
// ctx. Run may be called once; a second call fails at once.
func (s *Scraper) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("scrape: Scraper.Run called twice")
	}
	if s.dialect == DialectNone {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(s.interval)
	defer t.Stop()
	// Leave no idle keep-alive connection (and its goroutines) behind
	// once scraping ends.
	defer s.client.CloseIdleConnections()
	for {
		s.scrape(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// scrape fetches and parses once and stores the new snapshot; a scrape cut
// short because ctx ended changes nothing.
func (s *Scraper) scrape(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ranks, err := s.fetch(sctx)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		s.fail(err)
		s.textFailed(err)
	} else {
		s.succeed(ranks)
		s.keepExposition(sctx)
	}
	s.onChange()
}

// succeed stores a fresh snapshot of ranks, the overrides applied.
func (s *Scraper) succeed(ranks []load.Rank) {
	prev := s.snap.Load()
	if prev.Stale {
		s.log.Info("engine metrics fresh again", "dialect", string(s.active), "failed_scrapes", prev.FailedScrapes)
	}
	next := &EngineLoad{
		Dialect: s.active, Ranks: s.overrides.apply(ranks, s.overrides.DataParallelSize), At: time.Now(),
	}
	s.snap.Store(next)
}

// fail stores the previous snapshot with one more failure, stale from the
// StaleAfter-th; the change to stale is logged once.
func (s *Scraper) fail(err error) {
	next := *s.snap.Load() // Ranks is shared, and neither snapshot changes it
	next.FailedScrapes++
	next.Err = err.Error()
	next.Dialect = s.active
	if next.FailedScrapes >= StaleAfter && !next.Stale {
		next.Stale = true
		s.log.Warn("engine metrics stale", "dialect", string(s.active), "failed_scrapes", next.FailedScrapes,
			"last_success", next.At, "error", err)
	}
	s.snap.Store(&next)
}
