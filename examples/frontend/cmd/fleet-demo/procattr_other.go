//go:build !linux

package main

import "syscall"

// sysProcAttr puts a child in a process group of its own, so that stop
// reaches what it starts too. Outside Linux there is no Pdeathsig: a demo
// killed with SIGKILL leaves its children running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
