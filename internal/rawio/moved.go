package rawio

import (
	"net"
	"time"
)

// Moved is the connection an owner keeps in place of one whose socket
// MoveOut took, until MoveIn: the closed connection would hold its
// descriptor's state and both addresses for as long as the socket is
// out. Every call fails with net.ErrClosed (Close with nothing to do);
// its addresses are "moved".
func Moved() net.Conn { return movedConn{} }

// movedConn is Moved's: zero-sized, so that making one costs nothing.
type movedConn struct{}

func (movedConn) Read([]byte) (int, error)         { return 0, net.ErrClosed }
func (movedConn) Write([]byte) (int, error)        { return 0, net.ErrClosed }
func (movedConn) Close() error                     { return nil }
func (movedConn) LocalAddr() net.Addr              { return movedAddr{} }
func (movedConn) RemoteAddr() net.Addr             { return movedAddr{} }
func (movedConn) SetDeadline(time.Time) error      { return net.ErrClosed }
func (movedConn) SetReadDeadline(time.Time) error  { return net.ErrClosed }
func (movedConn) SetWriteDeadline(time.Time) error { return net.ErrClosed }

type movedAddr struct{}

func (movedAddr) Network() string { return "moved" }
func (movedAddr) String() string  { return "moved" }
