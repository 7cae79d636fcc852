//go:build !linux

package rawio

import (
	"net"
	"syscall"
)

// Socket is unavailable off Linux: NewSocket returns nil, and callers
// use the connection as it is.
type Socket struct{}

// NewSocket returns nil off Linux.
func NewSocket(net.Conn) *Socket { return nil }

// RawConn is never called: there is no Socket.
func (*Socket) RawConn() syscall.RawConn { return nil }

// Read is never called: there is no Socket.
func (*Socket) Read([]byte) (int, error) { return 0, nil }

// Write is never called: there is no Socket.
func (*Socket) Write([]byte) (int, error) { return 0, nil }
