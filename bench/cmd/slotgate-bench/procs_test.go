package main

import "testing"

// TestFreePortsAreDistinct asks for 500 ports at once. Chosen one by one,
// each closed before the next, the kernel's random picks repeat a port
// among 500 nearly always (15 to 21 repeats in each of five tries here),
// and a slotgate given one port for two listeners refuses to start.
func TestFreePortsAreDistinct(t *testing.T) {
	ports, err := freePorts(500)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[int]bool, len(ports))
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Fatalf("freePorts(500) gave port %d twice (or none)", p)
		}
		seen[p] = true
	}
}
