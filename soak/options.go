package soak

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// Options configures a soak. BinDir and OutDir are required, and so is
// Duration or Requests (the soak stops at whichever comes first).
type Options struct {
	// BinDir holds the slotgate and enginesim binaries.
	BinDir string
	// OutDir receives the processes' logs: slotgate.log (its access log
	// among them) and enginesim-1.log, enginesim-2.log... one per start.
	OutDir string
	// Duration bounds the load phase; 0: no time bound.
	Duration time.Duration
	// Requests stops the load once this many requests were sent, retries
	// included (the last few may overshoot it by the clients' retries in
	// progress); 0: no count bound.
	Requests int64
	// Concurrency is the number of client goroutines; default 64.
	Concurrency int
	// N and Q are slotgate's engine request limit and queue limit at the
	// start; N changes while the soak runs, between N/2 and 2N. Defaults
	// 4 and 8.
	N, Q int
	// Seed seeds every random choice: the client mix, the limit and fault
	// changes. Default 1.
	Seed int64
	// NoFaults runs without enginesim's fault injection, for an enginesim
	// built without it.
	NoFaults bool
	// Progress, when not nil, receives a line per phase and a line of
	// counts every few seconds.
	Progress io.Writer
}

func (o Options) withDefaults() (Options, error) {
	if o.Concurrency == 0 {
		o.Concurrency = 64
	}
	if o.N == 0 {
		o.N = 4
	}
	if o.Q == 0 {
		o.Q = 8
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	var errs []error
	if o.BinDir == "" {
		errs = append(errs, errors.New("soak: BinDir is required"))
	}
	if o.OutDir == "" {
		errs = append(errs, errors.New("soak: OutDir is required"))
	}
	if o.Duration <= 0 && o.Requests <= 0 {
		errs = append(errs, errors.New("soak: set Duration or Requests (or both)"))
	}
	if o.Duration < 0 || o.Requests < 0 {
		errs = append(errs, errors.New("soak: Duration and Requests must not be negative"))
	}
	if o.Concurrency < 1 || o.Concurrency > 4096 {
		errs = append(errs, fmt.Errorf("soak: Concurrency %d: want 1 through 4096", o.Concurrency))
	}
	if o.N < 1 || o.N > 1000 || o.Q < 0 || o.Q > 10000 {
		errs = append(errs, fmt.Errorf("soak: N %d, Q %d: want N 1 through 1000, Q 0 through 10000", o.N, o.Q))
	}
	return o, errors.Join(errs...)
}
