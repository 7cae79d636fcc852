package limiter_test

import (
	"context"
	"errors"
	"testing"

	"github.com/slotgate/slotgate/limiter"
)

// TestTryAcquire: a free slot is taken at once; with every slot held a
// request that would queue gets ErrWouldWait and changes nothing, not even
// a counter; a full queue or class refuses it with ErrQueueFull, counted as
// AcquireRequest counts it; a bad class is refused.
func TestTryAcquire(t *testing.T) {
	l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: 2,
		Classes: []limiter.Class{{Name: "a", Quantum: 1, Limit: 1}, {Name: "b", Quantum: 1}}})
	release, err := l.TryAcquire(limiter.Request{})
	if err != nil || release == nil {
		t.Fatalf("free slot: TryAcquire = %v", err)
	}
	before := l.Stats()
	if _, err := l.TryAcquire(limiter.Request{}); !errors.Is(err, limiter.ErrWouldWait) {
		t.Fatalf("slot held, queue empty: TryAcquire = %v, want ErrWouldWait", err)
	}
	if after := l.Stats(); after.Holding != before.Holding || after.Waiting != before.Waiting ||
		after.AdmittedDirect != before.AdmittedDirect || after.RejectedFull != before.RejectedFull {
		t.Errorf("ErrWouldWait changed the limiter: %+v, then %+v", before, after)
	}

	// One waiter of class a fills that class; one of b fills the queue.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	queued := make(chan struct{}, 2)
	done := make(chan error, 2)
	for class := range 2 {
		go func() {
			r, err := l.AcquireRequest(ctx, limiter.Request{Class: class, OnQueued: func() { queued <- struct{}{} }})
			if r != nil {
				r.Release()
			}
			done <- err
		}()
		<-queued
	}
	for _, tc := range []struct {
		name  string
		class int
		want  error
	}{
		{"class at its limit", 0, limiter.ErrQueueFull},
		{"queue full", 1, limiter.ErrQueueFull},
		{"bad class", 7, limiter.ErrBadClass},
	} {
		if _, err := l.TryAcquire(limiter.Request{Class: tc.class}); !errors.Is(err, tc.want) {
			t.Errorf("%s: TryAcquire = %v, want %v", tc.name, err, tc.want)
		}
	}
	if got := l.Stats().RejectedFull; got != before.RejectedFull+2 {
		t.Errorf("RejectedFull = %d, want %d", got, before.RejectedFull+2)
	}
	cancel()
	release.Release()
	for range 2 {
		<-done
	}
	if err := l.CheckInvariants(); err != nil {
		t.Error(err)
	}
}

// TestRefuses: Refuses takes nothing when a slot is free or the request
// would wait, and changes no counter then; with the queue or its class
// full it refuses as TryAcquire does, counted the same.
func TestRefuses(t *testing.T) {
	l := newLimiter(t, limiter.Options{Slots: 1, QueueLen: 1,
		Classes: []limiter.Class{{Name: "a", Quantum: 1}}})
	unchanged := func(when string, before limiter.Stats) {
		t.Helper()
		if after := l.Stats(); after.Holding != before.Holding || after.Waiting != before.Waiting ||
			after.AdmittedDirect != before.AdmittedDirect || after.RejectedFull != before.RejectedFull {
			t.Errorf("%s: Refuses changed the limiter: %+v, then %+v", when, before, after)
		}
	}
	before := l.Stats()
	if err := l.Refuses(limiter.Request{}); err != nil {
		t.Fatalf("free slot: Refuses = %v, want nil", err)
	}
	unchanged("free slot", before)

	held, err := l.TryAcquire(limiter.Request{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	before = l.Stats()
	if err := l.Refuses(limiter.Request{}); err != nil {
		t.Fatalf("slot held, queue empty: Refuses = %v, want nil", err)
	}
	unchanged("room in the queue", before)

	ctx, cancel := context.WithCancel(context.Background())
	queued, done := make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := l.AcquireRequest(ctx, limiter.Request{OnQueued: func() { close(queued) }})
		done <- err
	}()
	<-queued
	before = l.Stats()
	for _, tc := range []struct {
		name  string
		class int
		want  error
	}{
		{"queue full", 0, limiter.ErrQueueFull},
		{"bad class", 3, limiter.ErrBadClass},
	} {
		if err := l.Refuses(limiter.Request{Class: tc.class}); !errors.Is(err, tc.want) {
			t.Errorf("%s: Refuses = %v, want %v", tc.name, err, tc.want)
		}
	}
	if got := l.Stats(); got.RejectedFull != before.RejectedFull+1 || got.Waiting != 1 || got.Holding != 1 {
		t.Errorf("after a refusal: %+v, want RejectedFull %d, 1 waiting, 1 holding", got, before.RejectedFull+1)
	}
	cancel()
	<-done
	if err := l.CheckInvariants(); err != nil {
		t.Error(err)
	}
}
