package relay

import (
	"fmt"
	"syscall"

	"github.com/slotgate/slotgate/internal/rawio"
)

// moveOut takes the stream's sockets out of Go's netpoller when it has
// Movers for both; on failure both are as they were.
func (st *stream) moveOut() error {
	if st.EngineMover == nil || st.ClientMover == nil {
		return nil
	}
	efd, err := st.EngineMover.MoveOut()
	if err != nil {
		return fmt.Errorf("relay: take the engine's socket: %w", err)
	}
	cfd, err := st.ClientMover.MoveOut()
	if err != nil {
		if c, ierr := st.EngineMover.MoveIn(efd); ierr == nil {
			st.Engine = c
		}
		return fmt.Errorf("relay: take the client's socket: %w", err)
	}
	st.efd, st.cfd, st.moved = efd, cfd, true
	// The connections are closed (their Movers keep stand-ins): holding
	// them would keep their state for the stream's life.
	st.Engine, st.Client = rawio.Moved(), rawio.Moved()
	return nil
}

// moveInUsed gives back, at the stream's end, the sockets that res leaves
// of use: the engine's when reusable, the client's when the answer ended
// (its connection may carry the next request) and it was not parked (the
// loop's then). It closes the others itself: a connection about to be
// closed need not come back into Go's netpoller first (a duplicate, its
// registration, and a close through it), and its owner keeps the closed
// stand-in it has. It reports whether the engine's came back.
func (st *stream) moveInUsed(res Result) (engineBack bool) {
	if !st.moved {
		return true
	}
	st.moved = false
	engineBack = res.EngineReusable
	if engineBack {
		engine, err := st.EngineMover.MoveIn(st.efd)
		if engineBack = err == nil; engineBack {
			st.Engine = engine
		}
	} else {
		_ = syscall.Close(st.efd)
	}
	switch {
	case res.Parked: // the loop's still
	case !res.Ended || res.ClientGone:
		_ = syscall.Close(st.cfd)
	default:
		if client, err := st.ClientMover.MoveIn(st.cfd); err == nil {
			st.Client = client
		}
	}
	return engineBack
}
