package limiter_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/slotgate/slotgate/limiter"
)

// BenchmarkAcquireRelease measures one uncontended Acquire and release.
func BenchmarkAcquireRelease(b *testing.B) {
	l := newLimiter(b, limiter.Options{Slots: 1})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		release, err := l.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		release.Release()
	}
}

// BenchmarkAcquireReleaseParallel measures Acquire and release from
// GOMAXPROCS goroutines: NoQueue with more slots than goroutines, so the
// cost is the shared lock; Contended with about half as many slots as
// goroutines, so requests queue and each release hands its slot over.
func BenchmarkAcquireReleaseParallel(b *testing.B) {
	procs := runtime.GOMAXPROCS(0)
	tests := []struct {
		name  string
		slots int
	}{
		{name: "NoQueue", slots: 1 << 20},
		{name: "Contended", slots: max(1, procs/2)},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			l := newLimiter(b, limiter.Options{Slots: tt.slots, QueueLen: 1 << 20})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					release, err := l.Acquire(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					release.Release()
				}
			})
			if s := l.Stats(); s.Holding != 0 || s.Waiting != 0 {
				b.Fatalf("Holding %d Waiting %d after the benchmark", s.Holding, s.Waiting)
			}
			b.ReportMetric(float64(l.Stats().AdmittedQueued)/float64(b.N), "queued/op")
		})
	}
}

// BenchmarkReject measures the ErrQueueFull path of a full limiter.
func BenchmarkReject(b *testing.B) {
	l := newLimiter(b, limiter.Options{Slots: 1})
	release := acquireDirect(b, l)
	defer release()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Acquire(ctx); !errors.Is(err, limiter.ErrQueueFull) {
			b.Fatalf("err = %v, want ErrQueueFull", err)
		}
	}
}

// chanSemaphore is the reference: a buffered channel used as a counting
// semaphore. It is not FIFO (woken senders race with newcomers), has no
// bounded queue and keeps no counters.
type chanSemaphore chan struct{}

func (s chanSemaphore) acquire(ctx context.Context) error {
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s chanSemaphore) tryAcquire() bool {
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s chanSemaphore) release() { <-s }

// BenchmarkChanSemaphore is the baseline for the benchmarks above, with the
// same sub-benchmarks.
func BenchmarkChanSemaphore(b *testing.B) {
	procs := runtime.GOMAXPROCS(0)
	b.Run("AcquireRelease", func(b *testing.B) {
		s := make(chanSemaphore, 1)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if err := s.acquire(ctx); err != nil {
				b.Fatal(err)
			}
			s.release()
		}
	})
	parallel := []struct {
		name  string
		slots int
	}{
		{name: "Parallel/NoQueue", slots: 1 << 20},
		{name: "Parallel/Contended", slots: max(1, procs/2)},
	}
	for _, tt := range parallel {
		b.Run(tt.name, func(b *testing.B) {
			s := make(chanSemaphore, tt.slots)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					if err := s.acquire(ctx); err != nil {
						b.Error(err)
						return
					}
					s.release()
				}
			})
		})
	}
	b.Run("Reject", func(b *testing.B) {
		s := make(chanSemaphore, 1)
		s <- struct{}{}
		b.ReportAllocs()
		for b.Loop() {
			if s.tryAcquire() {
				b.Fatal("acquired a full semaphore")
			}
		}
	})
}

// BenchmarkTwoClasses measures a limiter with two policy classes (quanta 3
// and 1): AcquireRelease uncontended, alternating the classes, as
// BenchmarkAcquireRelease; Contended from GOMAXPROCS goroutines, each
// alternating classes and costs, with about half as many slots as
// goroutines, so requests queue and releases are scheduled by DRR.
func BenchmarkTwoClasses(b *testing.B) {
	opts := limiter.Options{Slots: 1, QueueLen: 1 << 20, Classes: []limiter.Class{
		{Name: "interactive", Quantum: 3}, {Name: "batch", Quantum: 1},
	}}
	b.Run("AcquireRelease", func(b *testing.B) {
		l := newLimiter(b, opts)
		ctx := context.Background()
		reqs := [2]limiter.Request{{Class: 0}, {Class: 1, Cost: 2}}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			release, err := l.AcquireRequest(ctx, reqs[i&1])
			if err != nil {
				b.Fatal(err)
			}
			release.Release()
			i++
		}
	})
	b.Run("Contended", func(b *testing.B) {
		opts := opts
		opts.Slots = max(1, runtime.GOMAXPROCS(0)/2)
		l := newLimiter(b, opts)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			reqs := [2]limiter.Request{{Class: 0}, {Class: 1, Cost: 2}}
			i := 0
			for pb.Next() {
				release, err := l.AcquireRequest(ctx, reqs[i&1])
				if err != nil {
					b.Error(err)
					return
				}
				release.Release()
				i++
			}
		})
		s := l.Stats()
		if s.Holding != 0 || s.Waiting != 0 {
			b.Fatalf("Holding %d Waiting %d after the benchmark", s.Holding, s.Waiting)
		}
		b.ReportMetric(float64(s.AdmittedQueued)/float64(b.N), "queued/op")
	})
}
