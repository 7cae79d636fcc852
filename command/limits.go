package command

import (
	"net/http"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/admin/limits"
	"github.com/slotgate/slotgate/gate"
)

// adminRoutes are the admin port's routes beyond the fixed ones: the load
// endpoints, /busy_threshold and /limits.
func (a *app) adminRoutes() map[string]http.Handler {
	routes := a.load.routes(a.cfg, a.log)
	sugar := a.log.Named("limits").Sugar()
	routes[limits.Path] = limits.NewHandler(limits.Options{
		Limits: a.lims, Changed: a.load.notify, Logf: sugar.Infow,
	})
	return routes
}

// growRanks gives each rank the engine reports its own limiter, with
// --per-rank-limits: the ranks beyond --data-parallel-size (all of them
// without it) are known only once the engine's metrics have been read.
// It is told the highest rank plus one.
func growRanks(lims *gate.Limiters, log *zap.Logger) func(ranks int) {
	if !lims.PerRank() {
		return nil
	}
	return func(ranks int) {
		before := lims.Count()
		if ranks <= before {
			return
		}
		if err := lims.Grow(ranks); err != nil {
			log.Error("cannot add the limits of the ranks the engine reports", zap.Int("ranks", ranks), zap.Error(err))
			return
		}
		log.Info("admission limits now per rank for the ranks the engine reports", zap.Int("ranks_before", before), zap.Int("ranks", ranks))
	}
}
