package main

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Streams at scale (issue 17): thousands of SSE streams held open at
// once, their events 10–30 ms apart, on every target: what each event
// costs the proxy in CPU, what an open stream costs it in memory, how much
// later the first event and each next one arrive than directly, and that
// no event is lost or reordered on the way.

// streamCounts are the scenarios' stream counts, the plot's x axis.
var streamCounts = []int{256, 1024, 4096}

// The long-context scenario: streamLongCount streams whose prompts are
// longPromptBytes each (the body's cost: reading, estimating, forwarding).
const (
	streamLongCount = 256
	longPromptBytes = 32 << 10
)

// Metric names read elsewhere (the plot, the warnings, the goals).
const (
	clientCPUMetric   = "client CPU %"
	machineBusyMetric = "machine busy %"
	cpuPerEventMetric = "proxy CPU µs/event"
	engineLateP50     = "engine late p50 ms"
	engineLateP99     = "engine late p99 ms"
	heldITLP99        = "held ITL p99 ms"
)

var streamMetrics = []string{"events/s", "TTFT p50 ms", "TTFT p99 ms", "ITL p50 ms", "ITL p99 ms", heldITLP99,
	engineLateP50, engineLateP99, cpuPerEventMetric, "proxy CPU µs/stream", "RSS KiB/stream", "lost", "reordered", "errors", clientCPUMetric, machineBusyMetric}

func streamScaleScenarios() []scenario {
	var all []scenario
	for _, c := range streamCounts {
		sc := heldStreamsScenario(fmt.Sprintf("streams-%d", c), c, 0, c == 1024)
		if c == 4096 {
			sc.maxReps = 1 // about 10 s a run on 2 cores
		}
		all = append(all, sc)
	}
	return append(all, heldStreamsScenario("streams-long", streamLongCount, longPromptBytes, false))
}

func heldStreamsScenario(name string, streams, prompt int, profile bool) scenario {
	about := fmt.Sprintf("streams at scale: %d SSE streams opened together and held, each its own connection, events 10–30 ms apart "+
		"(20 ms mean, numbered) for --duration; N=%d, Q=16, never reached; a fresh proxy each run", streams, streams+64)
	if prompt > 0 {
		about += fmt.Sprintf("; every request carries a %d KiB prompt", prompt>>10)
	}
	about += "; TTFT from request written to first event, ITL between events read, held ITL between those read once every stream had its first (the burst of streams opening left out); engine late = how much later than its schedule the engine stand-in sent its events " +
		"(its timers' lateness on the machine every process shares, part of every target's ITL), in 100 µs steps; proxy CPU over the run ÷ events delivered; " +
		"RSS growth of the proxy's tree with every stream open ÷ streams (the median of up to 9 readings 100 ms apart while the streams run); client CPU % = the driver's share of the machine's busy CPU, machine busy % = the machine's busy share of its CPU time"
	metrics := slices.Clone(streamMetrics)
	if profile {
		about += "; slotgate's CPU profiled during each run once every stream is open (after the RSS reading): counting CPU % is the share of its samples in token counting " +
			"(prompt estimator and SSE parser), prompt and SSE each alone"
		metrics = append(metrics, profileMetrics...)
	}
	return scenario{
		name: name, about: about, n: streams + 64, q: 16,
		streams: streams, prompt: prompt, profile: profile,
		metrics: metrics,
		added:   []string{"TTFT p50 ms", "TTFT p99 ms", "ITL p50 ms", "ITL p99 ms", heldITLP99},
		fresh:   true,
		maxReps: 2,
		measure: heldStreams(streams, prompt, profile),
	}
}

// heldStreams measures one run of streams held on a freshly started
// target.
func heldStreams(streams, prompt int, profile bool) func(context.Context, trial) (map[string]float64, error) {
	return func(ctx context.Context, t trial) (map[string]float64, error) {
		idle, err := settledRSS(ctx, t)
		if err != nil {
			return nil, err
		}
		events := streamEvents(t.d)
		spec := streamSpec{addr: t.inst.addr, streams: streams, events: events,
			body: streamBody(prompt, events), timeout: t.d + 30*time.Second}
		// The profile starts once every stream is open and the RSS was
		// read (about a second later): the profiler's own buffers, which
		// grow with its samples, are not the streams' memory.
		var prof *profileRun
		var onOpen func()
		if profile && t.inst.admin != "" {
			onOpen = func() { prof = startProfile(ctx, t.inst.admin, t.d, t.env.run) }
		}
		m, err := measureStreams(ctx, t, spec, idle, onOpen)
		if prof != nil {
			shares, perr := prof.shares()
			if perr != nil {
				fmt.Printf("  (no profile shares: %v)\n", perr)
			}
			for k, v := range shares {
				m[k] = v
			}
		}
		return m, err
	}
}

// primeEngine opens the scenario's streams once on the engine stand-in
// itself, two events each, unmeasured, before the first run, so that no
// target's run is the engine's first burst of streams, in which its
// goroutines' stacks and its heap grow. The run first in its round had
// the higher TTFT p99 of its target's runs more often than not, unprimed
// (BENCHMARKS.md, "A socket's way back into Go in two calls"); the first
// target named is first in a command's first round.
func primeEngine(ctx context.Context, eng *engineProc, sc scenario) error {
	spec := streamSpec{addr: eng.addr, streams: sc.streams, events: 2, body: streamBody(sc.prompt, 2), timeout: 30 * time.Second}
	a := aggregateStreams(runStreams(ctx, spec, make(chan struct{})))
	if a.errors > 0 {
		return fmt.Errorf("%d of %d streams failed, first: %w", a.errors, sc.streams, a.firstErr)
	}
	return nil
}

// measureStreams runs spec against t and computes the scenario's
// metrics; idle is the proxy's RSS before. onOpen, when set, runs once
// the RSS with every stream open was read (rssWhileOpen).
func measureStreams(ctx context.Context, t trial, spec streamSpec, idle int, onOpen func()) (map[string]float64, error) {
	cpu := startCPU(t.inst.pid)
	before, err := readCPUTicks()
	if err != nil {
		return nil, err
	}
	opened, ended := make(chan struct{}), make(chan struct{})
	rss := make(chan rssReading, 1)
	go func() {
		r := rssWhileOpen(ctx, opened, ended, t.inst.pid)
		if onOpen != nil {
			onOpen()
		}
		rss <- r
	}()
	start := time.Now()
	got := runStreams(ctx, spec, opened)
	close(ended)
	elapsed := time.Since(start)
	after, err := readCPUTicks()
	if err != nil {
		return nil, err
	}
	busy := <-rss
	if busy.err != nil {
		return nil, fmt.Errorf("RSS with the streams open: %w", busy.err)
	}
	agg := aggregateStreams(got)
	if agg.complete == 0 {
		return nil, fmt.Errorf("no stream complete (%d errors, first: %v)", agg.errors, agg.firstErr)
	}
	total, err := cpu.perRequest(1) // µs over the run
	if err != nil {
		return nil, fmt.Errorf("proxy CPU: %w", err)
	}
	m := agg.metrics(elapsed)
	m[cpuPerEventMetric] = total / float64(max(1, agg.events))
	m["proxy CPU µs/stream"] = total / float64(spec.streams)
	m["RSS KiB/stream"] = 0
	if t.inst.pid != 0 {
		m["RSS KiB/stream"] = float64(busy.kib-idle) / float64(spec.streams)
	}
	if err := addEngineLateness(ctx, t.eng, m); err != nil {
		return nil, err
	}
	m[clientCPUMetric] = 100 * share(before, after)
	m[machineBusyMetric] = 100 * machineBusy(before, after)
	return m, nil
}

// addEngineLateness adds to m how late the engine stand-in sent the run's
// events (reset before the run).
func addEngineLateness(ctx context.Context, eng *engineProc, m map[string]float64) error {
	st, err := eng.stats(ctx)
	if err != nil {
		return err
	}
	m[engineLateP50] = float64(st.LateP50) / 1000
	m[engineLateP99] = float64(st.LateP99) / 1000
	return nil
}

// settledRSS warms the target up with fast requests (warmUp), lets it
// settle and returns its RSS (0 for direct, which has no process of its
// own).
func settledRSS(ctx context.Context, t trial) (int, error) {
	if err := warmUp(ctx, t.url, 4, 200*time.Millisecond); err != nil {
		return 0, err
	}
	if t.inst.pid == 0 {
		return 0, nil
	}
	return treeRSS(t.inst.pid)
}

type rssReading struct {
	kib int
	err error
}

// rssWhileOpen reads pid's tree RSS once every stream is open, then
// every rssEvery, rssSamples times at most or until ended (the streams
// are over), and returns the median; nothing for direct. One reading is
// as much a Go proxy's collector's timing as its streams' memory: its
// heap swings by its garbage between collections (one build's single
// readings at 256 streams ranged from 1 to 12 KiB a stream).
func rssWhileOpen(ctx context.Context, opened, ended <-chan struct{}, pid int) rssReading {
	select {
	case <-opened:
	case <-ctx.Done():
		return rssReading{err: ctx.Err()}
	}
	if pid == 0 {
		return rssReading{}
	}
	var samples []int
	for len(samples) < rssSamples {
		kib, err := treeRSS(pid)
		if err != nil {
			return rssReading{err: err}
		}
		samples = append(samples, kib)
		select {
		case <-time.After(rssEvery):
			continue
		case <-ended:
		case <-ctx.Done():
		}
		break
	}
	slices.Sort(samples)
	return rssReading{kib: samples[len(samples)/2]}
}

// The RSS with the streams open is the median of rssSamples readings
// rssEvery apart, the first once every stream is open.
const (
	rssSamples = 9
	rssEvery   = 100 * time.Millisecond
)

// streamsAggregate is every stream of a run taken together.
type streamsAggregate struct {
	ttft, itl               []time.Duration // sorted
	heldITL                 []time.Duration // sorted: the gaps read once every stream was open
	events, lost, reordered int
	complete, errors        int
	firstErr                error
}

func aggregateStreams(got []oneStream) streamsAggregate {
	var a streamsAggregate
	for _, s := range got {
		a.events += s.check.received
		a.lost += s.check.lost
		a.reordered += s.check.reordered
		if s.check.received > 0 {
			a.ttft = append(a.ttft, s.ttft)
			a.itl = append(a.itl, s.gaps...)
			a.heldITL = append(a.heldITL, s.gaps[s.held:]...)
		}
		if s.err != nil {
			a.errors++
			a.firstErr = cmpOr(a.firstErr, s.err)
			continue
		}
		a.complete++
	}
	slices.Sort(a.ttft)
	slices.Sort(a.itl)
	slices.Sort(a.heldITL)
	return a
}

func (a streamsAggregate) metrics(elapsed time.Duration) map[string]float64 {
	return map[string]float64{
		"events/s":    float64(a.events) / elapsed.Seconds(),
		"TTFT p50 ms": ms(percentile(a.ttft, 50)),
		"TTFT p99 ms": ms(percentile(a.ttft, 99)),
		"ITL p50 ms":  ms(percentile(a.itl, 50)),
		"ITL p99 ms":  ms(percentile(a.itl, 99)),
		heldITLP99:    ms(percentile(a.heldITL, 99)),
		"lost":        float64(a.lost),
		"reordered":   float64(a.reordered),
		"errors":      float64(a.errors),
	}
}
