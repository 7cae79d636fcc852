package main

import (
	"fmt"
	"syscall"
)

// Thousands of held streams need thousands of open files: the client one
// per stream, the engine one, a proxy two (client side and engine side).
// The driver raises its soft RLIMIT_NOFILE to the hard limit before it
// starts any child; the children inherit it (Go restores the original
// soft limit in children only when the program never set it itself), and
// the peers' configs ask for what they need within it (HAProxy sizes its
// own from maxconn, nginx has worker_rlimit_nofile).

// raiseFileLimit sets the soft limit on open files to the hard one and
// returns it.
func raiseFileLimit() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, fmt.Errorf("getrlimit RLIMIT_NOFILE: %w", err)
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return 0, fmt.Errorf("setrlimit RLIMIT_NOFILE to %d: %w", l.Max, err)
		}
	}
	return l.Cur, nil
}

// filesFor is the open files the busiest process of a run of held streams
// needs: a proxy's two per stream, and some to spare (listeners, logs,
// the engine's pool).
func filesFor(streams int) uint64 { return uint64(2*streams + 512) }

// needFiles leaves out, saying so, the scenarios whose streams need more
// open files than limit allows, or fails when they were named in
// --scenarios.
func needFiles(scs []scenario, limit uint64, named bool) ([]scenario, []string, error) {
	var kept []scenario
	var skipped []string
	for _, s := range scs {
		need := filesFor(s.streams)
		if s.streams == 0 || need <= limit {
			kept = append(kept, s)
			continue
		}
		msg := fmt.Sprintf("%s: needs %d open files per process, RLIMIT_NOFILE allows %d (raise the hard limit: ulimit -Hn, or LimitNOFILE)", s.name, need, limit)
		if named {
			return nil, nil, fmt.Errorf("%s", msg)
		}
		fmt.Println("slotgate-bench: skipping", msg)
		skipped = append(skipped, msg)
	}
	return kept, skipped, nil
}
