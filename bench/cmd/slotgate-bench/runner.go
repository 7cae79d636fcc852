package main

import (
	"context"
	"fmt"
	"time"
)

// Row is one target's results in one scenario.
type Row struct {
	Target  string             `json:"target"`
	Metrics map[string]Summary `json:"metrics"`
}

// ScenarioResult is one scenario on every target.
type ScenarioResult struct {
	Name    string   `json:"name"`
	About   string   `json:"about"`
	Metrics []string `json:"metrics"`
	Ratio   []string `json:"ratio_to_direct,omitempty"`
	Rows    []Row    `json:"rows"`
}

// runScenario starts every target with the scenario's cap, then measures
// them in turn, reps times, rotating the order from one round to the next
// so that drift on the machine hits all alike.
func runScenario(ctx context.Context, e *env, up *upstream, sc scenario, reps int, d time.Duration) (ScenarioResult, error) {
	res := ScenarioResult{Name: sc.name, About: sc.about, Metrics: sc.metrics, Ratio: sc.ratio}
	ts := e.targets()
	addrs := make([]string, len(ts))
	for i, t := range ts {
		addr, stop, err := t.up(ctx, up.addr, sc.n, sc.q)
		if err != nil {
			return res, fmt.Errorf("start %s: %w", t.name, err)
		}
		defer stop()
		addrs[i] = addr
	}
	runs := make([]map[string][]float64, len(ts))
	for i := range runs {
		runs[i] = map[string][]float64{}
	}
	if sc.warmup {
		for i := range ts {
			up.reset(sc.slots)
			if _, err := sc.measure(ctx, "http://"+addrs[i], up, 300*time.Millisecond); err != nil {
				return res, fmt.Errorf("%s: warm-up on %s: %w", sc.name, ts[i].name, err)
			}
		}
	}
	for rep := range reps {
		for k := range ts {
			i := (k + rep) % len(ts)
			up.reset(sc.slots)
			m, err := sc.measure(ctx, "http://"+addrs[i], up, d)
			if err != nil {
				return res, fmt.Errorf("%s on %s, run %d: %w", sc.name, ts[i].name, rep+1, err)
			}
			for name, v := range m {
				runs[i][name] = append(runs[i][name], v)
			}
			fmt.Printf("  %-9s %-9s run %d: %s\n", sc.name, ts[i].name, rep+1, brief(sc.metrics, m))
			if !sleep(ctx, 300*time.Millisecond) { // let the last requests end
				return res, ctx.Err()
			}
		}
	}
	for i, t := range ts {
		row := Row{Target: t.name, Metrics: map[string]Summary{}}
		for name, vs := range runs[i] {
			row.Metrics[name] = summarize(vs)
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

func brief(order []string, m map[string]float64) string {
	s := ""
	for _, k := range order {
		s += fmt.Sprintf("%s=%s ", k, num(m[k]))
	}
	return s
}
