//go:build !linux

package soak

import "os/exec"

// setParentDeath does nothing where the kernel has no parent-death signal.
func setParentDeath(*exec.Cmd) {}
