package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Fault is a misbehaviour enginesim can inject into a generation request,
// to test how a client or a proxy in front of it copes (issue 14, the
// chaos soak). A request suffers at most one.
type Fault string

// The faults, in the order a request draws them (FaultKinds).
const (
	// FaultReset cuts the connection abruptly once half the expected output
	// is streamed, or instead of a non-streamed answer. Over HTTP/1.1 the
	// TCP connection is closed with SO_LINGER 0 (a reset); over HTTP/2 the
	// stream is aborted; over gRPC the call ends with UNAVAILABLE.
	FaultReset Fault = "reset"
	// FaultError answers at once, without running the request: HTTP 500 in
	// OpenAI's error shape, or gRPC INTERNAL.
	FaultError Fault = "error"
	// FaultStall pauses the answer once for FaultSet.Stall: once half the
	// expected output is streamed, or before a non-streamed answer.
	FaultStall Fault = "stall"
	// FaultSlowFirstToken delays the first output by FaultSet.SlowFirstToken:
	// the first streamed token, or the whole of a non-streamed answer.
	FaultSlowFirstToken Fault = "slow_first_token"
	// FaultNeverEnd streams the output and then never ends the answer:
	// no finish reason, no usage, no [DONE] (SSE keep-alive comments
	// instead), no gRPC complete message; a non-streamed answer never
	// comes. It lasts until the client goes away or Faults.Shutdown.
	FaultNeverEnd Fault = "never_end"
)

// FaultKinds lists the faults in the order a request draws them.
func FaultKinds() []Fault {
	return []Fault{FaultReset, FaultError, FaultStall, FaultSlowFirstToken, FaultNeverEnd}
}

// DefaultFaultPause is the stall and the slow first token's delay when a
// setting leaves them out (the flags' default and the admin call's).
const DefaultFaultPause = 2 * time.Second

// FaultSet is the probability of each fault per request, each in [0, 1],
// and the length of the pauses. The zero FaultSet injects nothing. Its
// durations are taken as they are: a zero Stall is a stall of nothing.
type FaultSet struct {
	ResetRate          float64
	ErrorRate          float64
	StallRate          float64
	Stall              time.Duration
	SlowFirstTokenRate float64
	SlowFirstToken     time.Duration
	NeverEndRate       float64
}

// DefaultFaultSet injects nothing, with the default pauses.
func DefaultFaultSet() FaultSet {
	return FaultSet{Stall: DefaultFaultPause, SlowFirstToken: DefaultFaultPause}
}

// rates are the set's probabilities in FaultKinds order.
func (s FaultSet) rates() [numFaults]float64 {
	return [numFaults]float64{s.ResetRate, s.ErrorRate, s.StallRate, s.SlowFirstTokenRate, s.NeverEndRate}
}

// Validate returns every problem with s, joined, each naming the field as
// the admin call's JSON does.
func (s FaultSet) Validate() error {
	var errs []error
	for i, r := range s.rates() {
		if math.IsNaN(r) || r < 0 || r > 1 {
			errs = append(errs, fmt.Errorf("%s_rate: must be a number from 0 through 1, got %v", FaultKinds()[i], r))
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"stall", s.Stall}, {"slow_first_token", s.SlowFirstToken}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s: must not be negative, got %v", d.name, d.v))
		}
	}
	return errors.Join(errs...)
}

const numFaults = 5

// faultStream separates the fault draws from anything else seeded with the
// same seed.
const faultStream = 0x6661756c74 // "fault"

// Faults draws each request's fault from a seeded generator and counts the
// faults injected. Its set may be replaced while requests run; one Faults
// is shared by the HTTP API and the gRPC service, so that the admin call
// and the counts cover both. Its methods are safe for concurrent use.
type Faults struct {
	mu  sync.Mutex
	set FaultSet
	rng *rand.Rand // guarded by mu

	injected [numFaults]atomic.Uint64
	stop     chan struct{} // closed by Shutdown
	once     sync.Once
}

// NewFaults returns a Faults with set whose draws follow seed: the same
// seed and the same order of arrivals give the same faults. It fails when
// set is invalid.
func NewFaults(set FaultSet, seed uint64) (*Faults, error) {
	if err := set.Validate(); err != nil {
		return nil, fmt.Errorf("fault set: %w", err)
	}
	return &Faults{set: set, rng: rand.New(rand.NewPCG(seed, faultStream)), stop: make(chan struct{})}, nil
}

// Set returns the current fault set.
func (f *Faults) Set() FaultSet {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.set
}

// Replace makes set the fault set of the requests that arrive from now
// on; requests already running keep the fault they drew. The draws go on
// with the same generator. It fails, changing nothing, when set is
// invalid.
func (f *Faults) Replace(set FaultSet) error {
	if err := set.Validate(); err != nil {
		return fmt.Errorf("fault set: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set = set
	return nil
}

// Shutdown ends the faults' waits, for a server that shuts down
// gracefully: stalls and slow first tokens stop waiting, never-ending
// answers end as normal ones, and later requests do the same. It may be
// called more than once.
func (f *Faults) Shutdown() {
	f.once.Do(func() { close(f.stop) })
}

// Injected returns how many times each fault took effect since NewFaults.
func (f *Faults) Injected() map[Fault]uint64 {
	out := make(map[Fault]uint64, numFaults)
	for i, k := range FaultKinds() {
		out[k] = f.injected[i].Load()
	}
	return out
}

// draw picks one request's fault, "" for none, with one uniform number per
// request, whatever the rates: u falls in the first fault whose cumulative
// rate exceeds it, in FaultKinds order. So each fault has exactly its rate
// while the rates sum to at most 1; beyond that the later faults get what
// is left.
func (f *Faults) draw() (Fault, FaultSet) {
	f.mu.Lock()
	u, set := f.rng.Float64(), f.set
	f.mu.Unlock()
	sum := 0.0
	for i, r := range set.rates() {
		sum += r
		if u < sum {
			return FaultKinds()[i], set
		}
	}
	return "", set
}

// count records that fault k took effect.
func (f *Faults) count(k Fault) {
	for i, kind := range FaultKinds() {
		if kind == k {
			f.injected[i].Add(1)
		}
	}
}
