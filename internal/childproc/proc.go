package childproc

import (
	"os/exec"
	"syscall"
	"time"
)

// Proc is one child process, in a process group of its own, its output
// going to a log file.
type Proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	grace   time.Duration
	exited  chan struct{} // closed once the process was waited for
}

// Name is the name the child was started as.
func (p *Proc) Name() string { return p.name }

// LogPath is the file the child's stdout and stderr go to.
func (p *Proc) LogPath() string { return p.logPath }

// PID is the child's process id, and its process group's.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Exited is closed once the child ended and was waited for.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// ExitCode is the child's exit status once it ended, and -1 while it runs
// or when a signal ended it.
func (p *Proc) ExitCode() int {
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// Stop sends SIGTERM to the child's process group, then SIGKILL if the
// child has not ended within the group's grace, and returns once it was
// waited for. It is safe on a child that already ended.
func (p *Proc) Stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	pgid := p.cmd.Process.Pid // Setpgid: the group is the leader's pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	kill := time.NewTimer(p.grace)
	defer kill.Stop()
	select {
	case <-p.exited:
	case <-kill.C:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.exited
	}
}

// Record is what a child became, for a run's summary: the fleet demo's
// end-to-end test checks that each one ended.
type Record struct {
	Name     string `json:"name"`
	PID      int    `json:"pid"`
	ExitCode int    `json:"exit_code"` // -1 when ended by a signal
	Ended    bool   `json:"ended"`
}

// Record returns what the child has become so far.
func (p *Proc) Record() Record {
	r := Record{Name: p.name, PID: p.PID(), ExitCode: -1}
	select {
	case <-p.exited:
		r.Ended, r.ExitCode = true, p.cmd.ProcessState.ExitCode()
	default:
	}
	return r
}
