package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Round-by-round comparisons (issue 17). A burst's tail moves by more
// from run to run than most changes move it (TTFT p99 at 1024 streams
// ranged over 31–49 ms for one build), so a claim that one target beats
// another rests on many runs, each compared with the base's run in the
// same round, when the machine was in the same state for both. For each
// target against a base, each metric's paired values (the difference, or
// the ratio, of the two runs of a round) give a median and a count of
// the rounds in which the target was at or under the base. The driver
// writes this after its tables; `slotgate-bench pairs` pools the rounds
// of several results files, as a claim over 28 pairs needs.

// pairedMetric is one metric of one target against the base, over rounds.
type pairedMetric struct {
	values []float64 // one per round: target − base, or target ÷ base
	under  int       // rounds in which the target was at or under the base
}

// byRatio reports whether metric is compared by ratio: a rate or a cost
// (per second, µs per unit, KiB), whose scale changes from scenario to
// scenario. Times in milliseconds and counts are compared by difference.
func byRatio(metric string) bool {
	return strings.Contains(metric, "/s") || strings.Contains(metric, "µs/") || strings.Contains(metric, "KiB")
}

// pairRounds adds the rounds of one results file: target's and base's runs
// of a metric, round by round (the driver measures every target once per
// round, in rounds' order).
func (p *pairedMetric) pairRounds(target, base []float64, ratio bool) {
	for i := range min(len(target), len(base)) {
		t, b := target[i], base[i]
		if t <= b {
			p.under++
		}
		switch {
		case !ratio:
			p.values = append(p.values, t-b)
		case b != 0:
			p.values = append(p.values, t/b)
		}
	}
}

// pairedScenario is one scenario's comparisons against the base, pooled
// over results files: pairs[target][metric].
type pairedScenario struct {
	name    string
	metrics []string
	targets []string // in the order first seen
	pairs   map[string]map[string]*pairedMetric
	rounds  int // the most rounds any target was paired over
}

// pairScenarios pools the rounds of every scenario in results, each
// target against base; a scenario without base is left out.
func pairScenarios(results []Results, base string) []*pairedScenario {
	var out []*pairedScenario
	byName := map[string]*pairedScenario{}
	for _, res := range results {
		for _, sc := range res.Scenarios {
			b := slices.IndexFunc(sc.Rows, func(r Row) bool { return r.Target == base })
			if b < 0 {
				continue
			}
			ps := byName[sc.Name]
			if ps == nil {
				ps = &pairedScenario{name: sc.Name, metrics: sc.Metrics, pairs: map[string]map[string]*pairedMetric{}}
				byName[sc.Name] = ps
				out = append(out, ps)
			}
			ps.add(sc.Rows, sc.Rows[b])
		}
	}
	return out
}

// add pairs each row but base's and direct's with base, over the metrics
// both have.
func (ps *pairedScenario) add(rows []Row, base Row) {
	for _, row := range rows {
		if row.Target == base.Target || row.Target == "direct" {
			continue
		}
		byMetric := ps.pairs[row.Target]
		if byMetric == nil {
			byMetric = map[string]*pairedMetric{}
			ps.pairs[row.Target] = byMetric
			ps.targets = append(ps.targets, row.Target)
		}
		for _, m := range ps.metrics {
			t, okT := row.Metrics[m]
			b, okB := base.Metrics[m]
			if !okT || !okB {
				continue
			}
			pm := byMetric[m]
			if pm == nil {
				pm = &pairedMetric{}
				byMetric[m] = pm
			}
			pm.pairRounds(t.Runs, b.Runs, byRatio(m))
			ps.rounds = max(ps.rounds, pm.paired())
		}
	}
}

// paired is the number of rounds compared.
func (p *pairedMetric) paired() int {
	if p == nil {
		return 0
	}
	return len(p.values)
}

// writePaired writes, per scenario, a table of each target against base:
// a row per metric that was paired, a column per target, each cell the
// metric's median paired value and the rounds at or under the base.
func writePaired(w io.Writer, scs []*pairedScenario, base string) {
	for _, ps := range scs {
		if len(ps.targets) == 0 || ps.rounds == 0 {
			continue
		}
		fmt.Fprintf(w, "\n### %s: round by round against %s (up to %d rounds)\n\n", ps.name, base, ps.rounds)
		fmt.Fprintf(w, "Each cell: the median over the rounds of the target's run against %s's in the same round "+
			"(a difference, or a ratio where the metric is a rate or a cost), and in how many rounds the target was at or under %s.\n\n", base, base)
		head := append([]string{"metric"}, ps.targets...)
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, m := range ps.metrics {
			op := " − "
			if byRatio(m) {
				op = " ÷ "
			}
			cells := []string{m + op + base}
			paired := false
			for _, t := range ps.targets {
				pm := ps.pairs[t][m]
				paired = paired || pm.paired() > 0
				cells = append(cells, pairedCell(pm, byRatio(m)))
			}
			if paired {
				fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
			}
		}
	}
}

// pairedCell shows a metric's median paired value and its count of rounds
// at or under the base: "+2.90 (9 of 28 ≤)", "0.979x (17 of 28 ≤)".
func pairedCell(p *pairedMetric, ratio bool) string {
	if p.paired() == 0 {
		return "-"
	}
	med := summarize(p.values).Median
	var v string
	switch {
	case ratio:
		v = fmt.Sprintf("%.3fx", med)
	case med == float64(int64(med)):
		v = fmt.Sprintf("%+d", int64(med))
	default:
		v = fmt.Sprintf("%+.2f", med)
	}
	return fmt.Sprintf("%s (%d of %d ≤)", v, p.under, len(p.values))
}

// pairsMain is `slotgate-bench pairs [--base haproxy] FILE...`: the rounds
// of several results files pooled, each target against the base.
func pairsMain(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("pairs", flag.ContinueOnError)
	base := fs.String("base", "haproxy", "the target every other is compared with, round by round")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // the usage went to stderr
		}
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("no results files: usage: slotgate-bench pairs [--base TARGET] FILE.json [FILE.json]")
	}
	var all []Results
	for _, path := range fs.Args() {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var res Results
		if err := json.Unmarshal(b, &res); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		all = append(all, res)
	}
	scs := pairScenarios(all, *base)
	if len(scs) == 0 {
		return fmt.Errorf("no scenario in these files measured the target %q", *base)
	}
	writePaired(w, scs, *base)
	return nil
}
