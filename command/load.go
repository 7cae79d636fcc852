package command

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/config"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/internal/logging"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/load/busy"
	"github.com/slotgate/slotgate/load/inflight"
	"github.com/slotgate/slotgate/load/loadgrpc"
	"github.com/slotgate/slotgate/load/merge"
	"github.com/slotgate/slotgate/load/orcagrpc"
	"github.com/slotgate/slotgate/load/report"
	"github.com/slotgate/slotgate/load/scrape"
)

// loadParts know and publish the worker's load: the engine scraper,
// slotgate's own count of its flights, the busy thresholds, and the hub
// that merges them into snapshots. The three sources tell the hub of a
// change the same way: each is given notify as its onChange callback.
type loadParts struct {
	scraper    *scrape.Scraper
	flights    *inflight.Tracker
	thresholds *busy.Store
	hub        *report.Hub

	// Derived from each published snapshot for the request path, where
	// reading them must cost next to nothing.
	busy atomic.Bool
	// orcaOn is --orca-header: every answer carries the ORCA report, not
	// only those whose request asks for it.
	orcaOn bool
	// orcaFormat is the report's form when the request names none
	// (--orca-format).
	orcaFormat orcagrpc.Format
	// orcaGRPC is the ORCA load report in every form: for gRPC balancers,
	// served out of band on the gRPC proxy's server (orcaService) and per
	// call, and for HTTP ones, as a header. It is always kept: the gRPC
	// server is always there, on the proxy port, and any request may ask
	// for the header.
	orcaGRPC *orcagrpc.Reporter
	// ranks, when set, is told how many ranks each snapshot has (limits
	// per rank, grown to the ranks the engine reports).
	ranks func(n int)
}

func newLoadParts(cfg config.Config, lims *gate.Limiters, client *http.Client, log *zap.Logger) (*loadParts, error) {
	lp := &loadParts{
		orcaOn: cfg.ORCAHeader, orcaFormat: orcaFormat(cfg.ORCAFormat), ranks: growRanks(lims, log.Named("limits")),
		orcaGRPC: orcagrpc.NewReporter(orcagrpc.Options{Admitted: admittedOf(lims)}),
	}
	scraper, err := scrape.New(scrape.Options{
		Client:    client,
		EngineURL: cfg.EngineURL,
		Dialect:   scrape.Dialect(cfg.EngineMetricsDialect),
		Interval:  cfg.EngineMetricsInterval,
		Overrides: scrape.Overrides{
			KVTotalBlocks: cfg.KVTotalBlocks, BlockSize: cfg.BlockSize,
			MaxNumBatchedTokens: cfg.MaxNumBatchedTokens, DataParallelSize: cfg.DataParallelSize,
		},
		OnChange: lp.notify,
		Logger:   logging.Slog(log.Named("load")),
		// The proxy port's /metrics answers from the scrape's text.
		KeepExposition: cfg.ServeEngineMetrics,
	})
	if err != nil {
		return nil, err
	}
	thresholds, err := busy.NewStore(busy.Thresholds{
		ActiveDecodeBlocks: cfg.DecodeThreshold, ActivePrefillTokens: cfg.PrefillThreshold,
		ActivePrefillTokensFrac: cfg.PrefillThresholdFrac,
	}, lp.notify)
	if err != nil {
		return nil, err
	}
	lp.scraper, lp.thresholds, lp.flights = scraper, thresholds, inflight.New(lp.notify)
	sources := merge.Sources{
		Engine: scraper.Load, Flights: lp.flights, Requests: requestsOf(lims),
		Thresholds: thresholds.Load, Evaluator: busy.NewEvaluator(),
	}
	lp.hub, err = report.NewHub(report.HubOptions{Compute: sources.Compute, OnPublish: lp.published})
	if err != nil {
		return nil, err
	}
	lp.published(lp.hub.Latest())
	return lp, nil
}

// notify is the sources' onChange: it tells the hub that something may
// have changed, and never blocks. The hub does not exist yet while the
// parts are built; nothing is lost, since it computes its first snapshot
// when created, and nothing calls notify from another goroutine before
// run and the proxy start, after newLoadParts returned.
func (lp *loadParts) notify() {
	if lp.hub != nil {
		lp.hub.Notify()
	}
}

// published keeps what the request path reads of each snapshot.
func (lp *loadParts) published(s *report.Snapshot) {
	lp.busy.Store(s.Busy)
	if lp.ranks != nil {
		// Limiters are indexed by rank: as many as the highest rank
		// reported needs (the ranks are sorted, and may skip some).
		lp.ranks(s.Ranks[len(s.Ranks)-1].DPRank + 1)
	}
	lp.orcaGRPC.Update(s)
}

// orcaService is the ORCA out-of-band service (OpenRcaService) over the
// published load, for the gRPC proxy's server: a gRPC client's weighted
// round robin opens it on the address of the calls it balances. Its
// streams end when draining closes, so that they hold up neither the
// proxy port's shutdown nor the gRPC server's graceful stop.
func (lp *loadParts) orcaService(draining <-chan struct{}) (*orcagrpc.Service, error) {
	return orcagrpc.NewService(lp.orcaGRPC, orcagrpc.ServiceOptions{Draining: draining})
}

// admittedOf counts the requests the limiters have admitted, HTTP and gRPC
// (at once or from the queue), for the rate in the gRPC load report.
func admittedOf(lims *gate.Limiters) func() uint64 {
	return func() uint64 {
		s := lims.Stats()
		return s.AdmittedDirect + s.AdmittedQueued
	}
}

// orcaReport is the ORCA load report on proxied answers: in the form the
// request asks for with endpoint-load-metrics-format (TEXT, JSON or BIN,
// as vLLM reads it), else, with --orca-header, in --orca-format; a request
// that names an unknown form gets that default too. Without --orca-header,
// only a request that names a form gets a report.
func (lp *loadParts) orcaReport(req http.Header) string {
	f := lp.orcaFormat
	if asked := req[orcaFormatKey]; len(asked) > 0 {
		if g, ok := orcagrpc.ParseFormat(asked[0]); ok {
			f = g
		}
	} else if !lp.orcaOn {
		return ""
	}
	return lp.orcaGRPC.Header(f)
}

// orcaFormatKey is the request header naming the report's form, as
// net/http keeps it.
var orcaFormatKey = http.CanonicalHeaderKey(orcagrpc.FormatHeader)

// orcaFormat reads --orca-format, checked by config: text, json or bin.
func orcaFormat(name string) orcagrpc.Format {
	f, _ := orcagrpc.ParseFormat(name)
	return f
}

// requestsOf reads slotgate's admission state for the snapshot. With
// limits per rank it reads each rank's limiter once and adds them up, so
// the totals are the sums of the ranks published beside them.
func requestsOf(lims *gate.Limiters) func() report.Requests {
	return func() report.Requests {
		ranks := lims.RankStats()
		if ranks == nil {
			rr := rankRequestsOf(0, lims.Stats())
			return report.Requests{
				InFlight: rr.InFlight, Queued: rr.Queued, Prefilling: rr.Prefilling,
				Limit: rr.Limit, QueueLimit: rr.QueueLimit, WaitingLimit: rr.WaitingLimit,
				PrefillTokens: rr.PrefillTokens, QueuedTokens: rr.QueuedTokens,
				PrefillTokenLimit: rr.PrefillTokenLimit, QueueTokenLimit: rr.QueueTokenLimit,
			}
		}
		out := report.Requests{Ranks: make([]report.RankRequests, len(ranks))}
		for i, s := range ranks {
			rr := rankRequestsOf(i, s)
			out.Ranks[i] = rr
			out.InFlight += rr.InFlight
			out.Queued += rr.Queued
			out.Prefilling += rr.Prefilling
			out.Limit += rr.Limit
			out.QueueLimit += rr.QueueLimit
			out.WaitingLimit += rr.WaitingLimit
			out.PrefillTokens += rr.PrefillTokens
			out.QueuedTokens += rr.QueuedTokens
			out.PrefillTokenLimit += rr.PrefillTokenLimit
			out.QueueTokenLimit += rr.QueueTokenLimit
		}
		return out
	}
}

// rankRequestsOf is one limiter's admission state, as rank dpRank's.
func rankRequestsOf(dpRank int, s limiter.Stats) report.RankRequests {
	return report.RankRequests{
		DPRank: dpRank, InFlight: s.Holding, Queued: s.Waiting, Prefilling: s.Prefilling,
		Limit: s.Slots, QueueLimit: s.QueueLen, WaitingLimit: s.WaitingLimit,
		PrefillTokens: s.PrefillTokens, QueuedTokens: s.QueuedTokens,
		PrefillTokenLimit: s.PrefillTokenLimit, QueueTokenLimit: s.QueueTokenLimit,
	}
}

// run scrapes and publishes until ctx ends. It returns when both loops
// have. Threshold changes need no loop of their own: the store calls
// notify from the handler that made them.
func (lp *loadParts) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { _ = lp.scraper.Run(ctx) })
	wg.Go(func() { _ = lp.hub.Run(ctx) })
	wg.Wait()
}

// routes are the load endpoints of the admin port.
func (lp *loadParts) routes(cfg config.Config, log *zap.Logger) map[string]http.Handler {
	loads := report.NewHandler(lp.hub)
	sugar := log.Named("busy").Sugar()
	thresholds := busy.NewHandler(lp.thresholds, cfg.ModelName, sugar.Infow)
	return map[string]http.Handler{
		"GET " + report.PathLoad:   loads,
		"GET " + report.PathStream: loads,
		busy.Path:                  thresholds,
	}
}

// grpcStopTimeout bounds the gRPC server's stop once the drain is over:
// load watches are ended at once, GetLoad answers in microseconds, and
// health watches need no grace. It is not part of --shutdown-timeout.
const grpcStopTimeout = 500 * time.Millisecond

// serveGRPC serves the LoadReporter service and gRPC health on lis until
// ctx ends; health turns NOT_SERVING when draining closes.
func (lp *loadParts) serveGRPC(ctx context.Context, lis net.Listener, draining <-chan struct{}) error {
	opts := loadgrpc.ServeOptions{StopTimeout: grpcStopTimeout, Draining: draining}
	if err := loadgrpc.Serve(ctx, lis, lp.hub, opts); err != nil {
		return fmt.Errorf("gRPC admin: %w", err)
	}
	return nil
}
