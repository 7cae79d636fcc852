//go:build !linux

package childproc

import "syscall"

// sysProcAttr puts a child in a process group of its own, so that Stop
// reaches what it starts too. Outside Linux there is no Pdeathsig: a
// parent killed with SIGKILL leaves its children running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
