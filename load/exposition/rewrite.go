package exposition

import (
	"bytes"
	"math"
	"strconv"
)

// Queue is what slotgate holds back, to add to the engine's waiting gauge.
type Queue struct {
	// Total is the queue of the one limiter for the engine; it is read
	// only when ByRank is nil.
	Total int64
	// ByRank is each rank's queue, index = DP rank, with limits per rank.
	ByRank []int64
}

// Sum is the whole queue.
func (q Queue) Sum() int64 {
	if q.ByRank == nil {
		return q.Total
	}
	var n int64
	for _, r := range q.ByRank {
		n += r
	}
	return n
}

// Gauge names the family to adjust and the label that carries its DP rank.
type Gauge struct {
	// Family is the metric name, matched exactly.
	Family string
	// RankLabel is the label naming the DP rank (vLLM's engine, SGLang's
	// dp_rank); "" when the series are not per rank.
	RankLabel string
}

// AddQueue appends src to dst with q added to g's samples (see the package
// documentation for which sample gets which share) and returns the
// extended buffer. src is not modified.
func AddQueue(dst, src []byte, g Gauge, q Queue) []byte {
	plan := planShares(src, g, q)
	first := true
	for line := range bytes.Lines(src) {
		s, ok := parseSample(line)
		if !ok || s.name != g.Family {
			dst = append(dst, line...)
			continue
		}
		add := plan.share(s.rank(g.RankLabel), first)
		first = false
		dst = appendAdjusted(dst, line, s, add)
	}
	if !plan.anySeries && q.Sum() > 0 {
		dst = appendOwnSeries(dst, src, g.Family, q.Sum())
	}
	return dst
}

// shares is how the queue is spread over the family's series.
type shares struct {
	q         Queue
	anySeries bool
	// leftover is the queue of ranks without a series of their own, which
	// the first series takes; with one limiter, the whole queue.
	leftover int64
	// taken marks the ranks whose share a series already took: a rank
	// with several series (other labels differ) gets it once, on the first.
	taken map[int]bool
}

// planShares reads the family's series once to find the ranks that have
// one, so that the queue of the others can go to the first series.
func planShares(src []byte, g Gauge, q Queue) shares {
	p := shares{q: q, taken: map[int]bool{}}
	seen := map[int]bool{}
	for line := range bytes.Lines(src) {
		s, ok := parseSample(line)
		if !ok || s.name != g.Family {
			continue
		}
		p.anySeries = true
		if r := s.rank(g.RankLabel); r >= 0 {
			seen[r] = true
		}
	}
	if q.ByRank == nil {
		p.leftover = q.Total
		return p
	}
	for r, n := range q.ByRank {
		if !seen[r] {
			p.leftover += n
		}
	}
	return p
}

// share is what the series of rank (-1: none readable) adds; first says
// whether it is the family's first series.
func (p *shares) share(rank int, first bool) int64 {
	var n int64
	if first {
		n += p.leftover
	}
	if p.q.ByRank != nil && rank >= 0 && rank < len(p.q.ByRank) && !p.taken[rank] {
		p.taken[rank] = true
		n += p.q.ByRank[rank]
	}
	return n
}

// appendAdjusted appends line with add added to its value; a value that
// is not a finite number, or nothing to add, leaves the line as it is.
func appendAdjusted(dst, line []byte, s sample, add int64) []byte {
	if add == 0 {
		return append(dst, line...)
	}
	v, err := strconv.ParseFloat(string(line[s.valueStart:s.valueEnd]), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return append(dst, line...)
	}
	dst = append(dst, line[:s.valueStart]...)
	dst = strconv.AppendFloat(dst, v+float64(add), 'g', -1, 64)
	return append(dst, line[s.valueEnd:]...)
}

// appendOwnSeries adds a series for a family the engine does not export,
// with a TYPE line unless src already has one for it.
func appendOwnSeries(dst, src []byte, family string, n int64) []byte {
	if len(dst) > 0 && dst[len(dst)-1] != '\n' {
		dst = append(dst, '\n')
	}
	if !bytes.Contains(src, []byte("# TYPE "+family+" ")) {
		dst = append(dst, "# TYPE "+family+" gauge\n"...)
	}
	dst = append(dst, family+" "...)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\n')
}
