//go:build !linux

package relay

import (
	"context"
	"net"
)

// Relay is unavailable off Linux: New fails with ErrUnsupported.
type Relay struct{}

// New fails with ErrUnsupported off Linux.
func New(int) (*Relay, error) { return nil, ErrUnsupported }

// Run returns at once.
func (*Relay) Run(context.Context) {}

// Add fails with ErrUnsupported.
func (*Relay) Add(*Stream) error { return ErrUnsupported }

// Usable fails with ErrUnsupported.
func Usable(net.Conn) error { return ErrUnsupported }

// Loops is always 0.
func (*Relay) Loops() int { return 0 }

// Open is always 0.
func (*Relay) Open() int { return 0 }

// Added is always 0.
func (*Relay) Added() uint64 { return 0 }

// Parked is always 0.
func (*Relay) Parked() int { return 0 }

// Watched is unavailable off Linux.
type Watched struct{}

// Watch fails with ErrUnsupported.
func (*Relay) Watch(net.Conn, func()) (*Watched, error) { return nil, ErrUnsupported }

// Stop reports false.
func (*Watched) Stop() bool { return false }

// Wait fails with ErrUnsupported.
func (*Relay) Wait(*Waiter) error { return ErrUnsupported }
