package sim

// Stats is a snapshot of the engine, one entry per rank, and the
// engine-wide count of requests before their first token.
type Stats struct {
	Ranks []RankStats
	// BeforeFirstToken is the requests, over all ranks, that Submit queued
	// and that have neither produced an output token nor ended: waiting, or
	// running their prefill. BeforeFirstTokenMax is the most there have
	// been at once since New, exact: both change under a lock at each
	// transition, not when sampled. It is the engine-wide peak, which the
	// ranks' own peaks may not add up to.
	BeforeFirstToken, BeforeFirstTokenMax int
	// InFlight is the generation requests in flight at the APIs (HTTP
	// completions and chat completions, gRPC Generate): their handler has
	// started and has neither returned nor seen its request's context end.
	// It counts requests the engine refused or has not queued yet, and
	// answers held back by a fault. InFlightMax is the most at once since
	// New, exact as BeforeFirstTokenMax is.
	InFlight, InFlightMax int
}

// RankStats is a snapshot of one rank, taken under its lock, so its fields
// agree with each other.
type RankStats struct {
	Rank int
	// Running and Waiting are the requests in the batch and in the queue;
	// Preempted is how many of the waiting were preempted.
	Running, Waiting, Preempted int
	// WaitingTokens is the tokens the waiting requests will compute when
	// admitted (prompt, plus output so far for a preempted one);
	// PreemptedTokens is the preempted requests' share of it.
	WaitingTokens, PreemptedTokens int
	// RunningPrefills is the running requests still computing their prompt
	// (or recomputing after a preemption), and PrefillTokensLeft the tokens
	// they still have to compute.
	RunningPrefills, PrefillTokensLeft int
	// NumGPUBlocks is the rank's pool, the null block included; UsableBlocks
	// is NumGPUBlocks − 1; UsedBlocks are held by running requests.
	NumGPUBlocks, UsableBlocks, UsedBlocks, BlockSize int
	// MaxNumSeqs and MaxNumBatchedTokens are the rank's limits.
	MaxNumSeqs, MaxNumBatchedTokens int
	// Counters since start: prompt tokens of requests that produced a first
	// token, output tokens, preemptions, requests ended by finish reason,
	// steps run and blocks ever allocated.
	PromptTokens, GenerationTokens, Preemptions uint64
	Finished                                    map[string]uint64
	Steps, AllocatedBlocks                      uint64
	// GenThroughput is the output tokens per second of the last step, 0
	// while idle.
	GenThroughput float64
	// BeforeFirstToken and BeforeFirstTokenMax are Stats' counts for this
	// rank alone.
	BeforeFirstToken, BeforeFirstTokenMax int
}

// KVUsage is vLLM's kv_cache_usage_perc: used blocks over usable blocks,
// 0 to 1 (vLLM's BlockPool.get_usage: 1 − free/(num_gpu_blocks − 1)).
func (s RankStats) KVUsage() float64 {
	return float64(s.UsedBlocks) / float64(s.UsableBlocks)
}

// Stats returns a snapshot of every rank, each taken under its lock, and
// the engine-wide counts, taken last: while requests arrive or progress,
// BeforeFirstToken need not equal the sum of the ranks'.
func (e *Engine) Stats() Stats {
	out := Stats{Ranks: make([]RankStats, len(e.ranks))}
	for i, r := range e.ranks {
		out.Ranks[i] = r.stats()
	}
	hw := e.beforeFirst.get()
	out.BeforeFirstToken, out.BeforeFirstTokenMax = hw.n, hw.max
	fl := e.inFlight.get()
	out.InFlight, out.InFlightMax = fl.n, fl.max
	return out
}

func (r *rank) stats() RankStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := RankStats{
		Rank: r.id, Running: len(r.running), Waiting: len(r.waiting),
		NumGPUBlocks: r.opts.NumGPUBlocks, UsableBlocks: r.usable, UsedBlocks: r.used, BlockSize: r.opts.BlockSize,
		MaxNumSeqs: r.opts.MaxNumSeqs, MaxNumBatchedTokens: r.opts.MaxNumBatchedTokens,
		PromptTokens: r.counters.promptTokens, GenerationTokens: r.counters.generationTokens,
		Preemptions: r.counters.preemptions, Steps: r.counters.steps, AllocatedBlocks: r.counters.allocatedBlocks,
		Finished:         make(map[string]uint64, len(r.counters.finished)),
		BeforeFirstToken: r.beforeFirst.n, BeforeFirstTokenMax: r.beforeFirst.max,
	}
	for k, v := range r.counters.finished {
		st.Finished[k] = v
	}
	for _, s := range r.waiting {
		st.WaitingTokens += s.total()
		if s.preempted {
			st.Preempted++
			st.PreemptedTokens += s.total()
		}
	}
	for _, s := range r.running {
		if left := s.total() - s.computed; left > 1 || s.output == 0 {
			st.RunningPrefills++
			st.PrefillTokensLeft += left
		}
	}
	if r.last.seconds > 0 {
		st.GenThroughput = float64(r.last.sampled) / r.last.seconds
	}
	return st
}
