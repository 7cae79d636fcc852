//go:build !linux

package engine

import "net"

// PeerClosed reports whether the peer closed c. On this platform that is
// not known without a read, so it returns false: a close is seen when a
// read meets it.
func PeerClosed(net.Conn) bool { return false }

// writeWait writes b, whole, to the engine; peek has nothing to look with
// here.
func (ec *conn) writeWait(b []byte, _ bool) error {
	_, err := ec.c.Write(b)
	return err
}
