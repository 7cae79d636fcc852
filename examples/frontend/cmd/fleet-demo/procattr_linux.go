package main

import "syscall"

// sysProcAttr puts a child in a process group of its own, so that stop
// reaches what it starts too, and has the kernel kill it if the demo dies
// without cleaning up (SIGKILL, a crash).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
