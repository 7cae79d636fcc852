package loadgen

import (
	"math/rand/v2"
	"time"
)

// arrivalStream is the PCG stream of arrival gaps; request shapes use the
// streams 0, 1, 2, … (their index), and a run has fewer than 2^63.
const arrivalStream = 1 << 63

// maxGap bounds one gap, so a tiny rate cannot overflow time.Duration.
const maxGap = 24 * time.Hour

// arrivals is a Poisson process: exponential gaps of mean 1/rate seconds,
// drawn from a PRNG seeded with the run's seed.
type arrivals struct {
	rng  *rand.Rand
	rate float64
	at   time.Time
}

func newArrivals(seed uint64, rate float64, start time.Time) *arrivals {
	return &arrivals{rng: rand.New(rand.NewPCG(seed, arrivalStream)), rate: rate, at: start}
}

// next returns the time of the next arrival.
func (a *arrivals) next() time.Time {
	gap := a.rng.ExpFloat64() / a.rate * float64(time.Second)
	a.at = a.at.Add(time.Duration(min(gap, float64(maxGap))))
	return a.at
}
