package orcagrpc

import (
	"errors"
	"time"

	v3orcaservicegrpc "github.com/cncf/xds/go/xds/service/orca/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/slotgate/slotgate/load/report"
)

// Defaults of ServiceOptions.
const (
	// MinReportingInterval is the shortest interval between two reports
	// on a stream. gRPC's weighted round robin updates its weights at most
	// every 100 ms (gRFC A58), so a faster report could not change a
	// weight sooner.
	MinReportingInterval = 100 * time.Millisecond
	// ReportingInterval is the interval of a stream whose request names
	// none: the Hub's heartbeat.
	ReportingInterval = report.Heartbeat
)

// ServiceOptions configure a Service.
type ServiceOptions struct {
	// MinReportingInterval overrides the package's MinReportingInterval
	// when set: a shorter interval asked by a client is raised to it.
	MinReportingInterval time.Duration
	// Draining, when closed, ends every stream, those open and those to
	// come, with UNAVAILABLE. Nil: streams end only with their clients.
	Draining <-chan struct{}
}

// Service is the xds.service.orca.v3.OpenRcaService over a Reporter. Its
// methods are safe for concurrent use.
type Service struct {
	v3orcaservicegrpc.UnimplementedOpenRcaServiceServer

	rep      *Reporter
	min      time.Duration
	draining <-chan struct{}
}

// NewService returns the service of rep's reports. It starts nothing. It
// fails when rep is nil or the minimum interval is negative.
func NewService(rep *Reporter, opts ServiceOptions) (*Service, error) {
	switch {
	case rep == nil:
		return nil, errors.New("orcagrpc: a Reporter is required")
	case opts.MinReportingInterval < 0:
		return nil, errors.New("orcagrpc: the minimum reporting interval must not be negative")
	}
	s := &Service{rep: rep, min: opts.MinReportingInterval, draining: opts.Draining}
	if s.min == 0 {
		s.min = MinReportingInterval
	}
	return s, nil
}

// Register registers s on r as xds.service.orca.v3.OpenRcaService.
func (s *Service) Register(r grpc.ServiceRegistrar) {
	v3orcaservicegrpc.RegisterOpenRcaServiceServer(r, s)
}

// StreamCoreMetrics sends the Reporter's latest report at once, then one
// every interval (Interval), until the client's context ends (it returns
// CANCELED or DEADLINE_EXCEEDED, which the client no longer reads), a
// Send fails (it returns that error), or draining begins (UNAVAILABLE, at
// once for a stream opened while draining). request_cost_names is
// ignored: request costs are per call, never out of band.
func (s *Service) StreamCoreMetrics(req *v3orcaservicegrpc.OrcaLoadReportRequest, stream v3orcaservicegrpc.OpenRcaService_StreamCoreMetricsServer) error {
	select {
	case <-s.draining:
		return errDraining()
	default:
	}
	ctx := stream.Context()
	tick := time.NewTicker(s.Interval(req))
	defer tick.Stop()
	for {
		// The report is shared by every stream; Send only reads it.
		if err := stream.Send(s.rep.Report()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-s.draining:
			return errDraining()
		case <-tick.C:
		}
	}
}

// Interval is a stream's reporting interval: the request's
// report_interval, or ReportingInterval when it has none (or an invalid
// one), raised to the service's minimum.
func (s *Service) Interval(req *v3orcaservicegrpc.OrcaLoadReportRequest) time.Duration {
	d := ReportingInterval
	if ri := req.GetReportInterval(); ri != nil && ri.CheckValid() == nil {
		d = ri.AsDuration()
	}
	return max(d, s.min)
}

func errDraining() error {
	return status.Error(codes.Unavailable, "slotgate is draining: no more load reports")
}
