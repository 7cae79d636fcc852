package soak

import (
	"os/exec"
	"syscall"
)

// setParentDeath kills the child when the soak dies, so that a soak
// killed with SIGKILL leaves no slotgate or enginesim running.
func setParentDeath(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
