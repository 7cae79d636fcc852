//go:build !linux

package rawio

import (
	"errors"
	"fmt"
	"net"
)

// MoveOut is Linux's only: elsewhere the relay does not run.
func MoveOut(c net.Conn) (int, error) {
	return -1, fmt.Errorf("rawio: move out a %T: %w", c, errors.ErrUnsupported)
}

// MoveIn is Linux's only (MoveOut never succeeds elsewhere).
func MoveIn(fd int) (net.Conn, error) {
	return nil, fmt.Errorf("rawio: move in descriptor %d: %w", fd, errors.ErrUnsupported)
}
