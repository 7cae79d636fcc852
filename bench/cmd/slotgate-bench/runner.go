package main

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Row is one target's results in one scenario.
type Row struct {
	Target  string             `json:"target"`
	Metrics map[string]Summary `json:"metrics"`
}

// ScenarioResult is one scenario on every target.
type ScenarioResult struct {
	Name        string   `json:"name"`
	About       string   `json:"about"`
	N           int      `json:"n"`
	Q           int      `json:"q"`
	Concurrency int      `json:"concurrency,omitempty"` // the fast path's, for the plot
	Streams     int      `json:"streams,omitempty"`     // streams held at once, for the CPU plot
	PromptBytes int      `json:"prompt_bytes,omitempty"`
	Metrics     []string `json:"metrics"`
	Ratio       []string `json:"ratio_to_direct,omitempty"`
	Rows        []Row    `json:"rows"`
}

// runScenario starts each of the scenario's targets with its cap (or, for
// a fresh scenario, once per run), then measures them in turn, reps times,
// in the order roundOrder gives.
func runScenario(ctx context.Context, e *env, eng *engineProc, sc scenario, reps int, d time.Duration) (ScenarioResult, error) {
	res := ScenarioResult{Name: sc.name, About: sc.about, N: sc.n, Q: sc.q, Concurrency: sc.conc, Streams: sc.streams, PromptBytes: sc.prompt,
		Metrics: append(slices.Clone(sc.metrics), addedNames(sc.added)...), Ratio: sc.ratio}
	ts := e.targets(cmpOrSlice(sc.targets, defaultTargets), sc.grpc)
	up := upstream{http: eng.addr}
	if sc.grpc {
		sim, simUp, err := e.startEnginesim(ctx)
		if err != nil {
			return res, fmt.Errorf("%s: enginesim: %w", sc.name, err)
		}
		defer sim.stop()
		up = simUp
	}
	insts := make([]*instance, len(ts)) // nil: started for each run
	if !sc.fresh {
		for i, t := range ts {
			in, err := t.up(ctx, up, sc.n, sc.q)
			if err != nil {
				return res, fmt.Errorf("start %s: %w", t.name, err)
			}
			defer in.stop()
			insts[i] = in
		}
	}
	if sc.streams > 0 {
		if err := primeEngine(ctx, eng, sc); err != nil {
			return res, fmt.Errorf("%s: priming the engine: %w", sc.name, err)
		}
	}
	if sc.warmup {
		for i, t := range ts {
			if _, err := measureOnce(ctx, e, eng, up, sc, t, insts[i], 300*time.Millisecond); err != nil {
				return res, fmt.Errorf("%s: warm-up on %s: %w", sc.name, t.name, err)
			}
		}
	}
	runs, err := rounds(ctx, e, eng, up, sc, ts, insts, reps, d)
	if err != nil {
		return res, err
	}
	res.Rows = rows(ts, runs, sc.added)
	return res, nil
}

// rounds measures every target once per round, reps rounds, and returns
// each target's runs of each metric, in round order.
func rounds(ctx context.Context, e *env, eng *engineProc, up upstream, sc scenario, ts []target, insts []*instance, reps int, d time.Duration) ([]map[string][]float64, error) {
	runs := make([]map[string][]float64, len(ts))
	for i := range runs {
		runs[i] = map[string][]float64{}
	}
	for rep := range reps {
		for _, i := range roundOrder(len(ts), rep) {
			m, err := measureOnce(ctx, e, eng, up, sc, ts[i], insts[i], d)
			if err != nil {
				return nil, fmt.Errorf("%s on %s, run %d: %w", sc.name, ts[i].name, rep+1, err)
			}
			for name, v := range m {
				runs[i][name] = append(runs[i][name], v)
			}
			fmt.Printf("  %-9s %-16s run %d: %s\n", sc.name, ts[i].name, rep+1, brief(sc.metrics, m))
			if !sleep(ctx, 300*time.Millisecond) { // let the last requests end
				return nil, ctx.Err()
			}
		}
	}
	return runs, nil
}

// roundOrder is the order in which round rep measures n targets: as named
// in the even rounds, the other way in the odd ones. Over each two rounds
// every target's positions add up to the same, so that a drift on the
// machine over a command hits all alike; rotating the order instead left
// a target's mean position depending on where it was named (with three
// targets and two rounds the first named runs first and last, the second
// second and first).
func roundOrder(n, rep int) []int {
	order := make([]int, n)
	for k := range order {
		order[k] = k
		if rep%2 == 1 {
			order[k] = n - 1 - k
		}
	}
	return order
}

// rows summarizes each target's runs, with the added metrics computed
// against direct's when direct was measured.
func rows(ts []target, runs []map[string][]float64, added []string) []Row {
	if i := slices.IndexFunc(ts, func(t target) bool { return t.name == "direct" }); i >= 0 {
		for j := range runs {
			addRelative(runs[j], runs[i], added)
		}
	}
	out := make([]Row, len(ts))
	for i, t := range ts {
		out[i] = Row{Target: t.name, Metrics: map[string]Summary{}}
		for name, vs := range runs[i] {
			out[i].Metrics[name] = summarize(vs)
		}
	}
	return out
}

// measureOnce makes one measurement on target t, started already (in) or,
// when in is nil, started for this measurement alone in front of up. The
// engine stand-in is reset first, unless the scenario's engine is
// enginesim (gRPC), which has nothing to reset.
func measureOnce(ctx context.Context, e *env, eng *engineProc, up upstream, sc scenario, t target, in *instance, d time.Duration) (map[string]float64, error) {
	if in == nil {
		var err error
		if in, err = t.up(ctx, up, sc.n, sc.q); err != nil {
			return nil, fmt.Errorf("start %s: %w", t.name, err)
		}
		defer in.stop()
	}
	if !sc.grpc {
		if err := eng.reset(ctx, sc.slots); err != nil {
			return nil, err
		}
	}
	if !e.cpuProfile || sc.profile || in.admin == "" {
		return sc.measure(ctx, trial{url: "http://" + in.addr, inst: in, eng: eng, env: e, d: d})
	}
	// The profile covers the run's length: the scenario's own load
	// starts at once (a scenario that profiles, the streams', does it
	// itself, around its streams).
	prof := startProfile(ctx, in.admin, d, e.run)
	m, err := sc.measure(ctx, trial{url: "http://" + in.addr, inst: in, eng: eng, env: e, d: d})
	<-prof.done
	if prof.err != nil {
		fmt.Printf("  (no CPU profile of %s: %v)\n", t.name, prof.err)
	} else {
		fmt.Printf("  CPU profile of %s, %s: %s\n", t.name, sc.name, prof.path)
	}
	return m, err
}

// addRelative adds to runs, for each metric in names, "added <metric>":
// each run's value minus direct's value in the same round (the runs of a
// round are made one right after the other, so they share the machine's
// state of the moment).
func addRelative(runs, direct map[string][]float64, names []string) {
	for _, m := range names {
		a, b := runs[m], direct[m]
		if len(a) != len(b) {
			continue
		}
		out := make([]float64, len(a))
		for r := range a {
			out[r] = a[r] - b[r]
		}
		runs["added "+m] = out
	}
}

func addedNames(names []string) []string {
	out := make([]string, len(names))
	for i, m := range names {
		out[i] = "added " + m
	}
	return out
}

// cmpOrSlice returns a, or b when a is empty.
func cmpOrSlice[T any](a, b []T) []T {
	if len(a) == 0 {
		return b
	}
	return a
}

func brief(order []string, m map[string]float64) string {
	s := ""
	for _, k := range order {
		s += fmt.Sprintf("%s=%s ", k, num(m[k]))
	}
	return s
}
