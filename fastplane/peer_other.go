//go:build !linux

package fastplane

import "syscall"

// peerClosedWhenReadable cannot peek without waiting on this system: the
// watch reports nothing, and a queued client's departure is seen only
// when its slot is granted (Gone, which says false here too).
func peerClosedWhenReadable(syscall.RawConn) bool { return false }
