package sim

import (
	"errors"
	"slices"
	"testing"
)

// smallOptions is a pool of 10 usable blocks of 16 tokens on one rank.
func smallOptions() Options {
	return Options{NumGPUBlocks: 11, BlockSize: 16, MaxModelLen: 160, MaxNumSeqs: 8, MaxNumBatchedTokens: 256}
}

func TestScheduleRespectsMaxNumSeqs(t *testing.T) {
	for _, maxSeqs := range []int{1, 3, 8} {
		t.Run("", func(t *testing.T) {
			e := newEngine(t, Options{MaxNumSeqs: maxSeqs})
			for range 10 {
				submit(t, e, Request{PromptTokens: 10, MaxTokens: 4, IgnoreEOS: true})
			}
			r := e.ranks[0]
			for st := stepOnce(r); st != nil; st = stepOnce(r) {
				checkInvariants(t, r)
				if n := len(st.works); n > maxSeqs {
					t.Fatalf("a step ran %d requests, max-num-seqs %d", n, maxSeqs)
				}
			}
			if s := e.Stats().Ranks[0]; s.Finished[FinishLength] != 10 || s.UsedBlocks != 0 {
				t.Fatalf("after draining: %+v", s)
			}
		})
	}
}

func TestChunkedPrefill(t *testing.T) {
	tests := []struct {
		name    string
		budget  int
		prompts []int
		// chunks is the tokens of each step, the last decode steps left out.
		chunks [][]int
	}{
		{"fits in one step", 8192, []int{100}, [][]int{{100}}},
		{"split in two", 64, []int{100}, [][]int{{64}, {36}}},
		{"exactly the budget", 50, []int{100}, [][]int{{50}, {50}}},
		{"two prompts share the budget", 128, []int{100, 100}, [][]int{{100, 28}, {1, 72}}},
		{"decodes go first", 64, []int{10, 100}, [][]int{{10, 54}, {1, 46}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, Options{MaxNumBatchedTokens: tt.budget, MaxNumSeqs: 2})
			for _, p := range tt.prompts {
				submit(t, e, Request{PromptTokens: p, MaxTokens: 8, IgnoreEOS: true})
			}
			r := e.ranks[0]
			for i := 0; ; i++ {
				st := stepOnce(r)
				if st == nil {
					break
				}
				checkInvariants(t, r)
				if n := st.tokens(); n > tt.budget {
					t.Fatalf("step %d computed %d tokens, budget %d", i, n, tt.budget)
				}
				if i < len(tt.chunks) {
					var got []int
					for _, w := range st.works {
						got = append(got, w.tokens)
					}
					if !slices.Equal(got, tt.chunks[i]) {
						t.Errorf("step %d scheduled %v, want %v", i, got, tt.chunks[i])
					}
				}
			}
		})
	}
}

// A request is admitted only when its whole prompt's blocks fit; the queue
// is FIFO, so a small request behind it waits too.
func TestAdmissionNeedsPromptBlocks(t *testing.T) {
	e := newEngine(t, smallOptions())
	big1 := submit(t, e, Request{PromptTokens: 100, MaxTokens: 4, IgnoreEOS: true}) // 7 blocks
	big2 := submit(t, e, Request{PromptTokens: 100, MaxTokens: 4, IgnoreEOS: true}) // 7 more: no room
	small := submit(t, e, Request{PromptTokens: 1, MaxTokens: 4, IgnoreEOS: true})
	r := e.ranks[0]
	stepOnce(r)
	checkInvariants(t, r)
	if s := e.Stats().Ranks[0]; s.Running != 1 || s.Waiting != 2 || s.UsedBlocks != 7 {
		t.Fatalf("after one step: running %d, waiting %d, used %d; want 1, 2, 7", s.Running, s.Waiting, s.UsedBlocks)
	}
	for big1.s.state != stateFinished {
		stepOnce(r)
		checkInvariants(t, r)
	}
	stepOnce(r)
	if big2.s.state != stateRunning || small.s.state != stateRunning {
		t.Fatalf("after the first finished: states %d and %d, want both running", big2.s.state, small.s.state)
	}
}

func TestFIFOAdmission(t *testing.T) {
	e := newEngine(t, Options{MaxNumSeqs: 2})
	var hs []*Handle
	for range 6 {
		hs = append(hs, submit(t, e, Request{PromptTokens: 5, MaxTokens: 3, IgnoreEOS: true}))
	}
	r := e.ranks[0]
	var order []int // index of each request, as it got its first token
	for stepOnce(r) != nil {
		for i, h := range hs {
			if h.s.output > 0 && !slices.Contains(order, i) {
				order = append(order, i)
			}
		}
	}
	if want := []int{0, 1, 2, 3, 4, 5}; !slices.Equal(order, want) {
		t.Fatalf("requests started in order %v, want %v", order, want)
	}
}

// When decode runs out of blocks, the newest running request is preempted
// (LIFO), its blocks freed, and it goes back to the head of the queue,
// ahead of requests that never ran; it is recomputed later and every
// request still produces its whole output.
func TestPreemption(t *testing.T) {
	opts := smallOptions()
	opts.MaxNumSeqs = 3
	e := newEngine(t, opts)
	var hs []*Handle
	for range 4 { // the fourth waits for a sequence slot
		hs = append(hs, submit(t, e, Request{PromptTokens: 16, MaxTokens: 60, IgnoreEOS: true}))
	}
	r := e.ranks[0]
	var waiting []*seq
	for r.stats().Preemptions == 0 {
		if stepOnce(r) == nil {
			t.Fatal("ran out of work before any preemption")
		}
		checkInvariants(t, r)
		r.mu.Lock()
		waiting = slices.Clone(r.waiting)
		r.mu.Unlock()
	}
	victim := hs[2].s
	if len(waiting) != 2 || waiting[0] != victim || waiting[1] != hs[3].s {
		t.Fatal("the newest running request is not at the head of the queue, ahead of the one that never ran")
	}
	s := r.stats()
	if s.Preemptions != 1 || s.Waiting != 2 || s.Preempted != 1 || victim.blocks != 0 || victim.output == 0 {
		t.Fatalf("after the preemption: %+v; victim blocks %d output %d", s, victim.blocks, victim.output)
	}
	if s.UsedBlocks != hs[0].s.blocks+hs[1].s.blocks {
		t.Fatalf("used blocks %d, the two running requests hold %d", s.UsedBlocks, hs[0].s.blocks+hs[1].s.blocks)
	}
	for stepOnce(r) != nil {
		checkInvariants(t, r)
	}
	for i, h := range hs {
		if h.s.state != stateFinished || h.s.output != 60 || h.s.finish != FinishLength {
			t.Errorf("request %d: state %d, output %d, finish %q", i, h.s.state, h.s.output, h.s.finish)
		}
	}
	if s := r.stats(); s.UsedBlocks != 0 || s.GenerationTokens != 240 || s.PromptTokens != 64 {
		t.Errorf("after draining: %+v", s)
	}
}

func TestCloseFreesEverything(t *testing.T) {
	tests := []struct {
		name  string
		steps int  // steps before Close
		mid   bool // close between a step's planning and its completion
	}{
		{"waiting", 0, false},
		{"running", 3, false},
		{"during a step", 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, smallOptions())
			h := submit(t, e, Request{PromptTokens: 40, MaxTokens: 50, IgnoreEOS: true})
			other := submit(t, e, Request{PromptTokens: 20, MaxTokens: 50, IgnoreEOS: true})
			r := e.ranks[0]
			for range tt.steps {
				stepOnce(r)
			}
			var st *step
			if tt.mid {
				r.mu.Lock()
				st = r.schedule()
				r.mu.Unlock()
			}
			h.Close()
			checkInvariants(t, r)
			s := e.Stats().Ranks[0]
			if s.Running+s.Waiting != 1 || s.UsedBlocks != other.s.blocks || s.Finished[FinishAbort] != 1 {
				t.Fatalf("after Close: %+v", s)
			}
			if st != nil {
				r.finish(st) // must skip the aborted request
				checkInvariants(t, r)
			}
			if h.s.finish != FinishAbort || h.s.blocks != 0 {
				t.Fatalf("closed request: finish %q, blocks %d", h.s.finish, h.s.blocks)
			}
			h.Close() // a second Close changes nothing
			if got := e.Stats().Ranks[0].Finished[FinishAbort]; got != 1 {
				t.Fatalf("aborts after a second Close: %d", got)
			}
		})
	}
}

func TestQueueLimit(t *testing.T) {
	e := newEngine(t, Options{MaxNumQueuedReqs: 2})
	a := submit(t, e, Request{PromptTokens: 4, MaxTokens: 4})
	submit(t, e, Request{PromptTokens: 4, MaxTokens: 4})
	if _, err := e.Submit(Request{PromptTokens: 4, MaxTokens: 4}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("third Submit: %v, want ErrQueueFull", err)
	}
	stepOnce(e.ranks[0]) // running requests count too
	if _, err := e.Submit(Request{PromptTokens: 4, MaxTokens: 4}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("Submit with 2 running: %v, want ErrQueueFull", err)
	}
	a.Close()
	submit(t, e, Request{PromptTokens: 4, MaxTokens: 4})
}

func TestSubmitRefusesImpossibleRequests(t *testing.T) {
	e := newEngine(t, Options{MaxModelLen: 100})
	tests := []struct {
		req  Request
		want error
	}{
		{Request{PromptTokens: 0, MaxTokens: 1}, ErrInvalid},
		{Request{PromptTokens: 1, MaxTokens: 0}, ErrInvalid},
		{Request{PromptTokens: 90, MaxTokens: 11}, ErrTooLong},
		{Request{PromptTokens: 100, MaxTokens: 1}, ErrTooLong},
	}
	for _, tt := range tests {
		if _, err := e.Submit(tt.req); !errors.Is(err, tt.want) {
			t.Errorf("Submit(%+v) = %v, want %v", tt.req, err, tt.want)
		}
	}
	if _, err := e.Submit(Request{PromptTokens: 90, MaxTokens: 10}); err != nil {
		t.Errorf("a request of exactly MaxModelLen tokens: %v", err)
	}
}

func TestLeastLoadedRank(t *testing.T) {
	e := newEngine(t, Options{DataParallelSize: 3})
	var hs []*Handle
	for range 6 {
		hs = append(hs, submit(t, e, Request{PromptTokens: 4, MaxTokens: 4}))
	}
	for i, h := range hs {
		if h.Rank() != i%3 {
			t.Fatalf("request %d went to rank %d, want %d", i, h.Rank(), i%3)
		}
	}
	hs[1].Close()
	hs[4].Close() // rank 1 is now empty
	if h := submit(t, e, Request{PromptTokens: 4, MaxTokens: 4}); h.Rank() != 1 {
		t.Fatalf("next request went to rank %d, want the empty rank 1", h.Rank())
	}
}
