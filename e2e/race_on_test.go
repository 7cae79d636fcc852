//go:build race

package e2e_test

// raceEnabled builds the binary under test with the race detector when the
// tests themselves run with it.
const raceEnabled = true
