package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
)

// slotWindow is how far back a slot held now may have been admitted: a
// request's deadline, its abort grace, and room for a loaded machine.
// The slot bounds take the largest N in force over it.
const slotWindow = attemptDeadline + 2*time.Second

// driver is one soak's state.
type driver struct {
	opts      Options
	vs        violations
	hist      limitHistory
	control   *http.Client // admin and engine APIs, metrics
	transport *http.Transport
	grpcConn  *grpc.ClientConn
	engine    *engineSim
	sidecar   *sidecar
	clients   *clients

	// Engine lifetimes: the poller reads an engine's peak only when no
	// restart ran during its scrape.
	engMu       sync.Mutex
	engineStart time.Time
	engineGen   atomic.Int64
	restarting  atomic.Bool
	faultTotals map[string]float64
	// The engine excess reported last, so that a peak, which only
	// rises, is reported once per engine start and value.
	reportedSince time.Time
	reportedPeak  int

	peakEngine, peakBefore, peakSlots, peakQueue atomic.Int64
	engineScrapes                                atomic.Int64

	curN atomic.Int64
	// The chaos goroutine's, then finish's.
	limitChanges, faultChanges, restarts int
	faultsNow                            Faults
	missingPeakMetric                    atomic.Bool

	progressMu sync.Mutex // one progress line at a time
}

// Run drives one soak with opts and returns its report; the soak failed
// when the report has violations. An error means the soak could not run
// (a binary missing, a process that would not start). Cancelling ctx
// ends the load early; the final checks still run.
func Run(ctx context.Context, opts Options) (*Report, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("soak: out dir: %w", err)
	}
	d := &driver{opts: opts, faultTotals: map[string]float64{}, faultsNow: noFaults}
	d.curN.Store(int64(opts.N))
	d.control = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}, Timeout: 5 * time.Second}
	defer d.cleanup()
	if err := d.start(); err != nil {
		return nil, err
	}
	rep := &Report{N: opts.N, Q: opts.Q}

	mctx, stopMonitors := context.WithCancel(context.WithoutCancel(ctx))
	var monitors sync.WaitGroup
	monitors.Go(func() { d.pollSlotgate(mctx) })
	monitors.Go(func() { d.pollEngine(mctx) })

	began := time.Now()
	warm := 2 * time.Second
	if opts.Duration > 0 {
		warm = min(warm, opts.Duration/10)
	}
	d.progress("warm-up: %s of load without chaos", warm)
	d.runLoad(ctx, began.Add(warm), 0, false)
	d.baseline(ctx, rep)

	var end time.Time
	if opts.Duration > 0 {
		end = began.Add(opts.Duration)
	}
	d.progress("load: %d clients, N %d, Q %d, seed %d", opts.Concurrency, opts.N, opts.Q, opts.Seed)
	d.runLoad(ctx, end, 1, true)
	rep.Duration = time.Since(began)

	d.progress("final checks")
	fctx := context.WithoutCancel(ctx)
	d.finish(fctx, rep)
	stopMonitors()
	monitors.Wait()
	d.conclude(fctx, rep)
	return rep, nil
}

// progress writes one line to opts.Progress. The load loop and the chaos
// goroutine both report, and a Progress such as a strings.Builder is not
// safe for concurrent writes: the lines are written one at a time.
func (d *driver) progress(format string, args ...any) {
	d.progressMu.Lock()
	defer d.progressMu.Unlock()
	fmt.Fprintf(d.opts.Progress, "soak: "+format+"\n", args...)
}

// start starts enginesim, then slotgate in front of it, and the clients.
func (d *driver) start() error {
	o := d.opts
	args := []string{"--speedup-ratio", "10", "--seed", fmt.Sprint(o.Seed)}
	if !o.NoFaults {
		rng := rand.New(rand.NewPCG(uint64(o.Seed), 7))
		d.faultsNow = randomFaults(rng)
		args = append(args, d.faultsNow.flags()...)
	}
	d.engine = &engineSim{bin: o.BinDir, outDir: o.OutDir, args: args, client: d.control}
	d.hist.record(time.Now(), o.N)
	d.engineStart = time.Now()
	if err := d.engine.start(); err != nil {
		return err
	}
	sc, err := startSidecar(o.BinDir, o.OutDir, d.engine, o.N, o.Q, d.control)
	if err != nil {
		return err
	}
	d.sidecar = sc
	d.transport = &http.Transport{Proxy: nil, MaxIdleConns: 2 * o.Concurrency, MaxIdleConnsPerHost: 2 * o.Concurrency,
		IdleConnTimeout: time.Minute, DisableCompression: true}
	conn, err := grpc.NewClient(sc.proxyAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("soak: gRPC client: %w", err)
	}
	d.grpcConn = conn
	d.clients = &clients{
		http:   &http.Client{Transport: d.transport},
		grpc:   enginepb.NewVllmEngineClient(conn),
		base:   sc.proxy,
		prefix: fmt.Sprintf("soak-%d-", o.Seed),
		active: &activeGauge{vs: &d.vs, bound: func() int { return d.hist.maxSince(time.Now().Add(-slotWindow)) + o.Q }},
	}
	return d.waitReady()
}

// waitReady waits for slotgate to see the engine ready, so that the
// first requests are not refused as unready.
func (d *driver) waitReady() error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := d.control.Get(d.sidecar.admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("soak: slotgate not ready within 30s (log %s)", d.sidecar.logPath)
}

// cleanup kills what is still running, on every path out of Run.
func (d *driver) cleanup() {
	if d.grpcConn != nil {
		d.grpcConn.Close()
	}
	if d.sidecar != nil && d.sidecar.proc.running() {
		d.sidecar.proc.kill()
	}
	if d.engine != nil && d.engine.proc != nil && d.engine.proc.running() {
		d.engine.proc.kill()
	}
}

// more reports whether a client may start another request.
func (d *driver) more(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return false
	default:
	}
	return d.opts.Requests <= 0 || int64(d.clients.seq.Load()) < d.opts.Requests
}

// runLoad runs the clients until end (zero: none), the request budget or
// ctx, with the chaos goroutine when chaos is set, and returns once every
// request has ended.
func (d *driver) runLoad(ctx context.Context, end time.Time, phase uint64, chaos bool) {
	stop := make(chan struct{})
	actx := context.WithoutCancel(ctx) // requests end by their own deadlines
	var workers, helpers sync.WaitGroup
	for i := range d.opts.Concurrency {
		rng := rand.New(rand.NewPCG(uint64(d.opts.Seed), phase<<32|uint64(i)))
		workers.Go(func() {
			for d.more(stop) {
				d.clients.send(actx, stop, rng, drawPlan(rng))
			}
		})
	}
	if chaos {
		start := time.Now()
		helpers.Go(func() { d.chaos(actx, stop, start, end) })
	}
	done := make(chan struct{})
	go func() { workers.Wait(); close(done) }() // ends with the workers
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastReport := time.Now()
loop:
	for {
		select {
		case <-done:
			break loop
		case <-ctx.Done():
			break loop
		case now := <-tick.C:
			if !end.IsZero() && now.After(end) {
				break loop
			}
			if now.Sub(lastReport) >= 5*time.Second {
				lastReport = now
				d.progress("%d requests sent, %d retries, %d admitted in flight, N %d", d.requestsSent(),
					d.clients.retries.Load(), d.clients.active.n.Load(), d.curN.Load())
			}
		}
	}
	close(stop)
	workers.Wait()
	helpers.Wait()
}

// requestsSent is the number of requests sent, retries included.
func (d *driver) requestsSent() int64 { return int64(d.clients.seq.Load()) }
