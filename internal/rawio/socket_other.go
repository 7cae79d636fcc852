//go:build !linux

package rawio

import (
	"net"
	"sync"
	"syscall"
)

// Socket is unavailable off Linux: NewSocket's is never Usable, and
// callers use the connection as it is.
type Socket struct{}

// NewSocket returns a Socket that is not Usable.
func NewSocket(net.Conn) Socket { return Socket{} }

// Usable is false off Linux.
func (Socket) Usable() bool { return false }

// RawConn is nil: there is no socket to work.
func (Socket) RawConn() syscall.RawConn { return nil }

// Read is never called: the Socket is not Usable.
func (Socket) Read([]byte) (int, error) { return 0, nil }

// Write is never called: the Socket is not Usable.
func (Socket) Write([]byte) (int, error) { return 0, nil }

// WriteWait is never called: the Socket is not Usable.
func (Socket) WriteWait([]byte, bool) (bool, error) { return false, nil }

// ReadPooled is never called: the Socket is not Usable.
func (Socket) ReadPooled(*sync.Pool) (*[]byte, error) { return nil, nil }
