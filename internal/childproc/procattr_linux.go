package childproc

import "syscall"

// sysProcAttr puts a child in a process group of its own, so that Stop
// reaches what it starts too, and has the kernel kill it if its parent
// dies without cleaning up (SIGKILL, a crash).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
