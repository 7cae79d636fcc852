package loadgen_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/slotgate/slotgate/loadgen"
)

func ExamplePercentile() {
	// Ten samples, 1ms to 10ms, sorted. Nearest rank: p90 is the 9th.
	var s []time.Duration
	for i := 1; i <= 10; i++ {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	fmt.Println(loadgen.Percentile(s, 50), loadgen.Percentile(s, 90), loadgen.Percentile(s, 99))
	// Output: 5ms 9ms 10ms
}

func ExampleParseDist() {
	d, err := loadgen.ParseDist("uniform:16:128")
	if err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	n := d.Sample(rng)
	fmt.Println(d, n >= 16 && n <= 128)
	_, err = loadgen.ParseDist("normal:300:-5")
	fmt.Println(err)
	// Output:
	// uniform:16:128 true
	// standard deviation: "-5" is not a number from 0 to 1000000
}
