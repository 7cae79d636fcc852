package limiter_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/slotgate/slotgate/limiter"
)

func ExampleLimiter() {
	// Two engine slots and one queue place: at most three requests are
	// admitted or waiting at once.
	l, err := limiter.New(limiter.Options{Slots: 2, QueueLen: 1})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	r1, _ := l.Acquire(ctx)
	r2, _ := l.Acquire(ctx)

	// The third request waits; OnQueued tells us when it is in the queue.
	queued := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		release, err := l.AcquireRequest(ctx, limiter.Request{OnQueued: func() { close(queued) }})
		if err != nil {
			fmt.Println("third:", err)
			return
		}
		defer release.Release()
		fmt.Println("third: admitted after waiting")
	}()
	<-queued

	// The fourth is refused at once.
	if _, err := l.Acquire(ctx); errors.Is(err, limiter.ErrQueueFull) {
		fmt.Println("fourth:", err)
	}
	s := l.Stats()
	fmt.Printf("holding %d/%d, waiting %d/%d\n", s.Holding, s.Slots, s.Waiting, s.QueueLen)

	r1.Release() // hands the slot to the third request
	<-done
	r2.Release()
	r2.Release() // a second call does nothing

	s = l.Stats()
	fmt.Printf("holding %d, waiting %d\n", s.Holding, s.Waiting)
	fmt.Printf("direct %d, queued %d, refused %d\n", s.AdmittedDirect, s.AdmittedQueued, s.RejectedFull)
	// Output:
	// fourth: limiter: engine slots and queue are full
	// holding 2/2, waiting 1/1
	// third: admitted after waiting
	// holding 0, waiting 0
	// direct 2, queued 1, refused 1
}

func ExampleLimiter_SetSlots() {
	l, err := limiter.New(limiter.Options{Slots: 1, QueueLen: 4})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	first, _ := l.Acquire(ctx)

	// A second request waits for the only slot.
	queued := make(chan struct{})
	admitted := make(chan func())
	go func() {
		release, err := l.AcquireRequest(ctx, limiter.Request{OnQueued: func() { close(queued) }})
		if err != nil {
			panic(err)
		}
		admitted <- release.Release
	}()
	<-queued

	// Raising the limit admits it at once.
	if err := l.SetSlots(2); err != nil {
		panic(err)
	}
	second := <-admitted
	s := l.Stats()
	fmt.Printf("after raising: slots %d, holding %d, waiting %d\n", s.Slots, s.Holding, s.Waiting)

	// Lowering the limit takes back nothing: both keep their slot, and the
	// slot released above the new limit is not handed on.
	if err := l.SetSlots(1); err != nil {
		panic(err)
	}
	s = l.Stats()
	fmt.Printf("after lowering: slots %d, holding %d\n", s.Slots, s.Holding)
	first.Release()
	s = l.Stats()
	fmt.Printf("after one release: slots %d, holding %d\n", s.Slots, s.Holding)
	second()

	fmt.Println(l.SetSlots(0))
	// Output:
	// after raising: slots 2, holding 2, waiting 0
	// after lowering: slots 1, holding 2
	// after one release: slots 1, holding 1
	// limiter: slots must be at least 1, got 0
}

func ExampleLimiter_waitingLimit() {
	// Four engine slots, of which at most one request may still wait for
	// its first token (Dynamo 1.7's engine waiting limit), and two queue
	// places.
	l, err := limiter.New(limiter.Options{Slots: 4, WaitingLimit: 1, QueueLen: 2})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	first, _ := l.Acquire(ctx)

	// A second request waits although three slots are free: the first
	// has not produced its first token yet.
	queued := make(chan struct{})
	admitted := make(chan *limiter.Permit)
	go func() {
		p, err := l.AcquireRequest(ctx, limiter.Request{OnQueued: func() { close(queued) }})
		if err != nil {
			panic(err)
		}
		admitted <- p
	}()
	<-queued
	s := l.Stats()
	fmt.Printf("holding %d/%d, before first token %d/%d, waiting %d\n", s.Holding, s.Slots, s.Prefilling, s.WaitingLimit, s.Waiting)

	// The first token frees the first request's waiting place, which
	// admits the second; the first keeps its slot.
	first.FirstToken()
	second := <-admitted
	s = l.Stats()
	fmt.Printf("holding %d/%d, before first token %d/%d, waiting %d\n", s.Holding, s.Slots, s.Prefilling, s.WaitingLimit, s.Waiting)

	// Release frees the slot, and the waiting place too when FirstToken
	// was not called (an answer that failed before any token).
	second.Release()
	first.Release()
	first.FirstToken() // after Release: does nothing
	s = l.Stats()
	fmt.Printf("holding %d, before first token %d\n", s.Holding, s.Prefilling)
	// Output:
	// holding 1/4, before first token 1/1, waiting 1
	// holding 2/4, before first token 1/1, waiting 0
	// holding 0, before first token 0
}
