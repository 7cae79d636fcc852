package sim

import (
	"slices"
	"strings"
	"testing"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// newEngine returns an engine with opts, failing the test on an error.
func newEngine(t *testing.T, opts Options) *Engine {
	t.Helper()
	e, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

// submit submits req, failing the test on an error; the handle is closed
// when the test ends.
func submit(t *testing.T, e *Engine, req Request) *Handle {
	t.Helper()
	h, err := e.Submit(req)
	if err != nil {
		t.Fatalf("Submit(%+v): %v", req, err)
	}
	t.Cleanup(h.Close)
	return h
}

// stepOnce runs one step of r by hand, as its loop would without the
// wait; it returns nil when r had nothing to run.
func stepOnce(r *rank) *step {
	r.mu.Lock()
	st := r.schedule()
	r.mu.Unlock()
	if st != nil {
		r.finish(st)
	}
	return st
}

// checkInvariants verifies the rank's bookkeeping.
func checkInvariants(t *testing.T, r *rank) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	held, noOutput := 0, 0
	for _, s := range slices.Concat(r.running, r.waiting) {
		if s.output == 0 {
			noOutput++
		}
	}
	if hw := r.beforeFirst; hw.n != noOutput || hw.n < 0 || hw.max < hw.n {
		t.Fatalf("before first token: count %d, max %d; %d running or waiting requests have no output", hw.n, hw.max, noOutput)
	}
	for _, s := range r.running {
		if s.state != stateRunning {
			t.Fatalf("a request in the batch has state %d", s.state)
		}
		if s.blocks < r.blocksFor(s.computed) {
			t.Fatalf("a running request computed %d tokens but holds %d blocks", s.computed, s.blocks)
		}
		held += s.blocks
	}
	for _, s := range r.waiting {
		if s.state != stateWaiting || s.blocks != 0 || s.computed != 0 {
			t.Fatalf("a waiting request has state %d, %d blocks, %d computed tokens", s.state, s.blocks, s.computed)
		}
	}
	switch {
	case held != r.used:
		t.Fatalf("requests hold %d blocks, the pool counts %d used", held, r.used)
	case r.used > r.usable || r.used < 0:
		t.Fatalf("%d blocks used of %d usable", r.used, r.usable)
	case len(r.running) > r.opts.MaxNumSeqs:
		t.Fatalf("%d running, max-num-seqs %d", len(r.running), r.opts.MaxNumSeqs)
	case r.opts.MaxNumQueuedReqs > 0 && len(r.running)+len(r.waiting) > r.opts.MaxNumQueuedReqs:
		t.Fatalf("%d running + %d waiting, max-num-queued-reqs %d", len(r.running), len(r.waiting), r.opts.MaxNumQueuedReqs)
	}
}
