package gate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
)

// rankLimiters gives n ranks the limits lo each; n = 0 gives one limiter
// for the engine.
func rankLimiters(t *testing.T, n int, lo limiter.Options) *gate.Limiters {
	t.Helper()
	newLim := func() (*limiter.Limiter, error) { return limiter.New(lo) }
	if n == 0 {
		l, err := newLim()
		if err != nil {
			t.Fatal(err)
		}
		return gate.EngineLimiter(l)
	}
	lims, err := gate.RankLimiters(n, newLim)
	if err != nil {
		t.Fatal(err)
	}
	return lims
}

// rankPlaces renders each rank's places as holding/prefilling/waiting,
// space-separated; with one limiter for the engine, the engine's.
func rankPlaces(lims *gate.Limiters) string {
	stats := lims.RankStats()
	if stats == nil {
		stats = []limiter.Stats{lims.Stats()}
	}
	parts := make([]string, len(stats))
	for i, s := range stats {
		parts[i] = fmt.Sprintf("%d/%d/%d", s.Holding, s.Prefilling, s.Waiting)
	}
	return strings.Join(parts, " ")
}

// What a rank step does.
const (
	arrive  = iota // a request arrives: unpinned, or pinned to rank
	prefill        // the request of step arg has its first token
	finish         // the request of step arg ends
)

// rankStep is one step of a placement script, and what follows it.
type rankStep struct {
	do     int
	pinned bool
	arg    int // arrive: the pinned rank; prefill, finish: the step of the request
	// For an arrival: refused (RejectedBadRequest, with a message naming
	// the rank), queued, or else admitted at once; the rank the exchange
	// gets, and whether the gate chose it, checked once it is admitted.
	refused, queued bool
	rank            int
	chosen          bool
	// places is rankPlaces after the step.
	places string
}

func unpinned(rank int, chosen bool, places string) rankStep {
	return rankStep{do: arrive, rank: rank, chosen: chosen, places: places}
}

func pinned(rank int, places string) rankStep {
	return rankStep{do: arrive, pinned: true, arg: rank, rank: rank, places: places}
}

func queued(s rankStep) rankStep { s.queued = true; return s }

// TestRankPlacement: with limits per rank, a request pinned to a rank
// takes that rank's places, waiting there if it must though another rank
// has room; an unpinned one goes to the rank with the most room, ties to
// the lowest, and the gate says it chose. With one limiter for the engine
// it never chooses.
func TestRankPlacement(t *testing.T) {
	tests := []struct {
		name   string
		ranks  int // 0: one limiter for the engine
		limits limiter.Options
		steps  []rankStep
	}{
		{name: "most room, ties to the lowest", ranks: 3, limits: limiter.Options{Slots: 1, QueueLen: 2}, steps: []rankStep{
			unpinned(0, true, "1/1/0 0/0/0 0/0/0"),
			unpinned(1, true, "1/1/0 1/1/0 0/0/0"),
			unpinned(2, true, "1/1/0 1/1/0 1/1/0"),
			queued(unpinned(0, true, "1/1/1 1/1/0 1/1/0")), // all full: the lowest
			queued(unpinned(1, true, "1/1/1 1/1/1 1/1/0")), // rank 0 has a waiter
			{do: finish, arg: 1, places: "1/1/1 1/1/0 1/1/0"},
			{do: finish, arg: 2, places: "1/1/1 1/1/0 0/0/0"},
			unpinned(2, true, "1/1/1 1/1/0 1/1/0"),
		}},
		{name: "pinned waits on its rank", ranks: 2, limits: limiter.Options{Slots: 1, QueueLen: 2}, steps: []rankStep{
			pinned(0, "1/1/0 0/0/0"),
			queued(pinned(0, "1/1/1 0/0/0")),
			unpinned(1, true, "1/1/1 1/1/0"),
			queued(pinned(1, "1/1/1 1/1/1")),
			{do: finish, arg: 0, places: "1/1/0 1/1/1"},
			{do: finish, arg: 2, places: "1/1/0 1/1/0"},
		}},
		{name: "pinned takes its rank first", ranks: 2, limits: limiter.Options{Slots: 1, QueueLen: 1}, steps: []rankStep{
			pinned(1, "0/0/0 1/1/0"),
			unpinned(0, true, "1/1/0 1/1/0"),
			queued(unpinned(0, true, "1/1/1 1/1/0")),
		}},
		{name: "pinned out of range", ranks: 2, limits: limiter.Options{Slots: 1, QueueLen: 1}, steps: []rankStep{
			{do: arrive, pinned: true, arg: 5, refused: true, places: "0/0/0 0/0/0"},
			{do: arrive, pinned: true, arg: 2, refused: true, places: "0/0/0 0/0/0"},
			{do: arrive, pinned: true, arg: -2, refused: true, places: "0/0/0 0/0/0"},
			unpinned(0, true, "1/1/0 0/0/0"),
		}},
		{name: "W only: a first token makes room", ranks: 2, limits: limiter.Options{WaitingLimit: 1, QueueLen: 2}, steps: []rankStep{
			unpinned(0, true, "1/1/0 0/0/0"),
			unpinned(1, true, "1/1/0 1/1/0"),
			{do: prefill, arg: 0, places: "1/0/0 1/1/0"},
			unpinned(0, true, "2/1/0 1/1/0"),
			queued(unpinned(0, true, "2/1/1 1/1/0")),
			queued(pinned(1, "2/1/1 1/1/1")),
			{do: prefill, arg: 1, places: "2/1/1 2/1/0"},
			{do: prefill, arg: 3, places: "3/1/0 2/1/0"}, // step 4's turn
		}},
		{name: "N and W of 1: a first token leaves N full", ranks: 2, limits: limiter.Options{Slots: 1, WaitingLimit: 1, QueueLen: 2}, steps: []rankStep{
			unpinned(0, true, "1/1/0 0/0/0"),
			{do: prefill, arg: 0, places: "1/0/0 0/0/0"},
			unpinned(1, true, "1/0/0 1/1/0"),
			queued(unpinned(0, true, "1/0/1 1/1/0")),
			{do: finish, arg: 0, places: "1/1/0 1/1/0"},
		}},
		{name: "engine limiter", limits: limiter.Options{Slots: 1, QueueLen: 1}, steps: []rankStep{
			unpinned(gate.Unpinned, false, "1/1/0"),
			queued(pinned(5, "1/1/1")), // no ranks to check it against
			{do: finish, arg: 0, places: "1/1/0"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lims := rankLimiters(t, tc.ranks, tc.limits)
				g, err := gate.New(gate.Options{Limiters: lims})
				if err != nil {
					t.Fatal(err)
				}
				run := newRankRun(t, g)
				for i, s := range tc.steps {
					run.step(i, s)
					if got := rankPlaces(lims); got != s.places {
						t.Fatalf("step %d: places %q, want %q", i, got, s.places)
					}
				}
				run.finishAll()
				if got, want := rankPlaces(lims), strings.TrimSpace(strings.Repeat("0/0/0 ", max(tc.ranks, 1))); got != want {
					t.Errorf("at the end: places %q, want %q", got, want)
				}
			})
		})
	}
}

// rankRun plays a placement script in a synctest bubble.
type rankRun struct {
	t    *testing.T
	g    *gate.Gate
	reqs []*rankRequest // by step; nil for the other steps
}

type rankRequest struct {
	want     rankStep
	ex       gate.Exchange
	ch       <-chan gate.Decision
	decided  bool
	finished bool
}

func newRankRun(t *testing.T, g *gate.Gate) *rankRun { return &rankRun{t: t, g: g} }

func (r *rankRun) step(i int, s rankStep) {
	r.t.Helper()
	switch s.do {
	case arrive:
		req := &rankRequest{want: s}
		rank := gate.Unpinned
		if s.pinned {
			rank = s.arg
		}
		req.ch = admitAsync(context.Background(), r.g, &req.ex, gate.Request{Pinned: s.pinned, Rank: rank})
		r.reqs = append(r.reqs, req)
		r.collect()
		if req.decided == s.queued {
			r.t.Fatalf("step %d: decided at once %v, want queued %v", i, req.decided, s.queued)
		}
		return
	case prefill:
		r.admitted(i, s.arg).ex.Prefilled()
	case finish:
		req := r.admitted(i, s.arg)
		r.g.Finish(&req.ex, false)
		req.finished = true
	}
	r.reqs = append(r.reqs, nil)
	r.collect()
}

// admitted is the request of step j, which must be admitted by now.
func (r *rankRun) admitted(i, j int) *rankRequest {
	r.t.Helper()
	req := r.reqs[j]
	if req == nil || !req.decided || req.ex.Outcome == gate.RejectedBadRequest {
		r.t.Fatalf("step %d: step %d is not an admitted request", i, j)
	}
	return req
}

// collect takes the decisions made by now, and checks each.
func (r *rankRun) collect() {
	r.t.Helper()
	for j, req := range r.reqs {
		if req == nil || req.decided {
			continue
		}
		d, ok := decided(req.ch)
		if !ok {
			continue
		}
		req.decided = true
		r.check(j, req, d)
	}
}

func (r *rankRun) check(j int, req *rankRequest, d gate.Decision) {
	r.t.Helper()
	w := req.want
	if w.refused {
		msg := fmt.Sprintf("data-parallel rank %d is not a rank of this engine", w.arg)
		if d.Admitted || req.ex.Outcome != gate.RejectedBadRequest || !strings.Contains(d.Message, msg) || d.RankChosen {
			r.t.Errorf("request %d: %+v, %s; want rejected_bad_request, %q", j, d, req.ex.Outcome, msg)
		}
		req.finished = true
		r.g.Finish(&req.ex, false)
		return
	}
	if !d.Admitted || req.ex.Rank != w.rank || d.RankChosen != w.chosen {
		r.t.Errorf("request %d: %+v on rank %d; want admitted on rank %d, chosen %v", j, d, req.ex.Rank, w.rank, w.chosen)
	}
	if want := map[bool]gate.Outcome{false: gate.AdmittedDirect, true: gate.AdmittedQueued}[w.queued]; req.ex.Outcome != want {
		r.t.Errorf("request %d: outcome %s, want %s", j, req.ex.Outcome, want)
	}
}

// finishAll finishes every admitted request until none is left waiting.
func (r *rankRun) finishAll() {
	r.t.Helper()
	for progress := true; progress; {
		progress = false
		for _, req := range r.reqs {
			if req != nil && req.decided && !req.finished {
				r.g.Finish(&req.ex, false)
				req.finished, progress = true, true
			}
		}
		r.collect()
	}
	for j, req := range r.reqs {
		if req != nil && !req.decided {
			r.t.Errorf("request %d still waits", j)
		}
	}
}

// TestLimitersGrow: Grow adds ranks with the limits in force, and never
// removes one; unpinned requests then find the new ranks' room. With one
// limiter for the engine it does nothing.
func TestLimitersGrow(t *testing.T) {
	lims := rankLimiters(t, 2, limiter.Options{Slots: 1, QueueLen: 1})
	set := limiter.Limits{Slots: 3, WaitingLimit: 2, QueueLen: 4}
	if _, _, err := lims.SetLimits(func(limiter.Limits) limiter.Limits { return set }); err != nil {
		t.Fatal(err)
	}
	g, err := gate.New(gate.Options{Limiters: lims})
	if err != nil {
		t.Fatal(err)
	}
	var held [4]gate.Exchange // two on each old rank, under W = 2
	for i := range held {
		if d := g.Admit(context.Background(), &held[i], gate.Request{Pinned: true, Rank: i % 2}); !d.Admitted {
			t.Fatalf("request %d not admitted", i)
		}
	}
	for _, n := range []int{4, 3, 1, 4} {
		if err := lims.Grow(n); err != nil {
			t.Fatalf("Grow(%d): %v", n, err)
		}
		if got := lims.Count(); got != 4 {
			t.Errorf("after Grow(%d): %d ranks, want 4", n, got)
		}
	}
	rs := lims.RankStats()
	for i, s := range rs {
		if got := (limiter.Limits{Slots: s.Slots, WaitingLimit: s.WaitingLimit, QueueLen: s.QueueLen}); got != set {
			t.Errorf("rank %d: limits %+v, want %+v", i, got, set)
		}
	}
	if got, want := rankPlaces(lims), "2/2/0 2/2/0 0/0/0 0/0/0"; got != want {
		t.Errorf("places %q, want %q", got, want)
	}
	var ex gate.Exchange
	if d := g.Admit(context.Background(), &ex, gate.Request{}); !d.Admitted || ex.Rank != 2 || !d.RankChosen {
		t.Errorf("unpinned after Grow: %+v on rank %d, want admitted on rank 2, chosen", d, ex.Rank)
	}
	var pin gate.Exchange
	if d := g.Admit(context.Background(), &pin, gate.Request{Pinned: true, Rank: 3}); !d.Admitted || pin.Rank != 3 {
		t.Errorf("pinned to a new rank: %+v on rank %d, want admitted on rank 3", d, pin.Rank)
	}
	s := lims.Stats()
	if s.Slots != 12 || s.WaitingLimit != 8 || s.QueueLen != 16 || s.Holding != 6 || s.Prefilling != 6 || s.AdmittedDirect != 6 {
		t.Errorf("Stats %+v, want the sums of 4 ranks: N 12, W 8, Q 16, 6 holding, prefilling and admitted", s)
	}
	if g.Stats().Holding != s.Holding {
		t.Errorf("gate's Stats %+v, want the limiters' sums", g.Stats())
	}
	for _, e := range []*gate.Exchange{&held[0], &held[1], &held[2], &held[3], &ex, &pin} {
		g.Finish(e, false)
	}
	if got, want := rankPlaces(lims), "0/0/0 0/0/0 0/0/0 0/0/0"; got != want {
		t.Errorf("after Finish: places %q, want %q", got, want)
	}
}

// TestLimitersGrowFails: a constructor that fails leaves the ranks as
// they were.
func TestLimitersGrowFails(t *testing.T) {
	made := 0
	broken := errors.New("no more")
	lims, err := gate.RankLimiters(2, func() (*limiter.Limiter, error) {
		if made++; made > 3 {
			return nil, broken
		}
		return limiter.New(limiter.Options{Slots: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := lims.Grow(5); !errors.Is(err, broken) {
		t.Errorf("Grow = %v, want %v", err, broken)
	}
	if got := lims.Count(); got != 2 {
		t.Errorf("%d ranks after a failed Grow, want 2", got)
	}
}

// TestEngineLimiter: one limiter for the engine has no ranks to grow and
// no stats per rank.
func TestEngineLimiter(t *testing.T) {
	lims := rankLimiters(t, 0, limiter.Options{Slots: 2, WaitingLimit: 1, QueueLen: 3})
	if err := lims.Grow(4); err != nil {
		t.Fatal(err)
	}
	if lims.PerRank() || lims.Count() != 1 || lims.RankStats() != nil {
		t.Errorf("per rank %v, %d limiters, rank stats %v; want false, 1, nil", lims.PerRank(), lims.Count(), lims.RankStats())
	}
	if s := lims.Stats(); s.Slots != 2 || s.WaitingLimit != 1 || s.QueueLen != 3 {
		t.Errorf("Stats %+v, want the limiter's own", s)
	}
}

func TestRankLimitersValidates(t *testing.T) {
	newLim := func() (*limiter.Limiter, error) { return limiter.New(limiter.Options{Slots: 1}) }
	broken := errors.New("broken")
	tests := []struct {
		name   string
		n      int
		newLim func() (*limiter.Limiter, error)
		want   error // nil: any error
	}{
		{name: "no ranks", n: 0, newLim: newLim},
		{name: "no constructor", n: 2},
		{name: "constructor fails", n: 2, newLim: func() (*limiter.Limiter, error) { return nil, broken }, want: broken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lims, err := gate.RankLimiters(tc.n, tc.newLim)
			if err == nil || lims != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("RankLimiters = %v, %v; want an error (%v)", lims, err, tc.want)
			}
		})
	}
}
