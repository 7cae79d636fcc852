package command

import (
	"context"
	"strconv"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/config"
	"github.com/slotgate/slotgate/internal/logging"
	"github.com/slotgate/slotgate/load/eventplane"
	"github.com/slotgate/slotgate/load/report"
)

// runEventPlane publishes the hub's load on Dynamo's event plane until ctx
// ends, and returns at once when the event plane is off. The publisher
// only watches the hub: the proxy never waits for it, and its connection
// is cut when ctx ends, so shutdown waits at most for a write in progress,
// whose deadline is bounded.
func runEventPlane(ctx context.Context, cfg config.Config, hub *report.Hub, log *zap.Logger) {
	if cfg.DynamoEventPlane == "" {
		return
	}
	log = log.Named("eventplane")
	p, err := newEventPublisher(cfg, log)
	if err != nil {
		// The configuration was checked at start-up: this is a bug.
		log.Error("dynamo event plane not started", zap.Error(err))
		return
	}
	_ = p.Run(ctx, hub)
}

// newEventPublisher builds the publisher from the configuration: the
// worker id given, or the one Dynamo's Kubernetes discovery derives from
// the pod's name.
func newEventPublisher(cfg config.Config, log *zap.Logger) (*eventplane.Publisher, error) {
	id, from := eventplane.PodInstanceID(cfg.DynamoPodName), "pod-name"
	if cfg.DynamoWorkerID != nil {
		id, from = *cfg.DynamoWorkerID, "dynamo-worker-id"
	}
	p, err := eventplane.New(eventplane.Options{
		URL: cfg.DynamoEventPlane,
		Endpoint: eventplane.Endpoint{
			Namespace: cfg.DynamoNamespace, Component: cfg.DynamoComponent, Name: cfg.DynamoEndpointName,
		},
		WorkerID:  id,
		Heartbeat: cfg.DynamoEventHeartbeat,
		Logger:    logging.Slog(log),
	})
	if err != nil {
		return nil, err
	}
	log.Info("publishing the load on dynamo's event plane", zap.String("subject", p.Subject()),
		zap.Uint64("worker_id", id), zap.String("worker_id_hex", strconv.FormatUint(id, 16)),
		zap.String("worker_id_from", from), zap.Duration("heartbeat", cfg.DynamoEventHeartbeat))
	return p, nil
}
