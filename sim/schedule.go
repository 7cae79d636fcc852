package sim

import (
	"slices"
	"time"
)

// work is one request's share of a step: tokens of it computed.
type work struct {
	s      *seq
	tokens int
	decode bool // one token of a sequence whose prompt is done
}

// step is one forward pass of a rank, as planned by schedule.
type step struct {
	works         []work
	prefillTokens int
	decodes       int
	duration      time.Duration
}

// tokens is the total tokens computed in the step.
func (st *step) tokens() int {
	n := 0
	for _, w := range st.works {
		n += w.tokens
	}
	return n
}

func (st *step) add(s *seq, tokens int) {
	decode := s.output > 0 && s.computed == s.total()-1
	st.works = append(st.works, work{s: s, tokens: tokens, decode: decode})
	if decode {
		st.decodes++
	} else {
		st.prefillTokens += tokens
	}
}

// schedule plans the next step, as vLLM's V1 scheduler does, and takes the
// blocks it needs; it returns nil when there is nothing to run. Running
// requests come first, in admission order, each with the tokens it still
// has to compute (a decode: 1; a prefill: the rest of its prompt), within
// the MaxNumBatchedTokens budget. A request whose next tokens need a block
// when none is free preempts the newest running request, possibly itself.
// Then, unless something was preempted, waiting requests are admitted in
// FIFO order while a sequence slot, budget and the blocks for their whole
// known sequence are free. The caller holds r.mu.
func (r *rank) schedule() *step {
	st := &step{}
	budget := r.opts.MaxNumBatchedTokens
	preempted := false
	for i := 0; i < len(r.running) && budget > 0; i++ {
		s := r.running[i]
		n := min(s.total()-s.computed, budget)
		ok, p := r.grow(s, s.computed+n)
		preempted = preempted || p
		if !ok {
			break // s was the newest and was preempted; nothing follows it
		}
		st.add(s, n)
		budget -= n
	}
	if !preempted {
		r.admit(st, budget)
	}
	if len(st.works) == 0 {
		return nil
	}
	r.counters.steps++
	st.duration = StepDuration(st.prefillTokens, st.decodes > 0, r.usage(), r.opts.SpeedupRatio)
	return st
}

// grow gives s the blocks for tokens tokens, preempting from the back of
// the batch until they fit. ok is false when s itself was preempted.
func (r *rank) grow(s *seq, tokens int) (ok, preempted bool) {
	need := r.blocksFor(tokens) - s.blocks
	for need > r.free() {
		preempted = true
		if r.preemptLast() == s {
			return false, true
		}
	}
	r.allocate(s, need)
	return true, preempted
}

// admit moves waiting requests to the batch, in order, while they fit.
func (r *rank) admit(st *step, budget int) {
	for len(r.waiting) > 0 && len(r.running) < r.opts.MaxNumSeqs && budget > 0 {
		s := r.waiting[0]
		need := r.blocksFor(s.total())
		if need > r.free() {
			return // FIFO: nothing overtakes the head
		}
		r.waiting = slices.Delete(r.waiting, 0, 1)
		r.allocate(s, need)
		s.state, s.preempted = stateRunning, false
		r.running = append(r.running, s)
		n := min(s.total(), budget)
		st.add(s, n)
		budget -= n
	}
}

// usage is the fraction of usable blocks in use.
func (r *rank) usage() float64 {
	return float64(r.used) / float64(r.usable)
}

// complete applies a finished step: each request computed its tokens, and
// one whose known sequence is now fully computed samples its next token;
// one that reached its target length ends, freeing its blocks. Requests
// aborted during the step are skipped. It returns how many ended. The
// caller holds r.mu.
func (r *rank) complete(st *step) (ended int) {
	sampled := 0
	for _, w := range st.works {
		s := w.s
		if s.state != stateRunning {
			continue
		}
		s.computed += w.tokens
		if s.computed < s.total() {
			continue
		}
		s.output++
		sampled++
		if s.output == 1 {
			r.countBeforeFirst(-1)
		}
		r.counters.generationTokens++
		if !s.counted {
			s.counted = true
			r.counters.promptTokens += uint64(s.prompt)
		}
		if s.output >= s.target {
			r.end(s, FinishReason(s.output, s.limit), nil)
			ended++
			continue
		}
		s.signal()
	}
	r.last = lastStep{sampled: sampled, seconds: st.duration.Seconds()}
	return ended
}
