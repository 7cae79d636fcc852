//go:build !unix

package proxy_test

import "time"

// processCPU is unknown here: the benchmarks then report no CPU time.
func processCPU() time.Duration { return 0 }
