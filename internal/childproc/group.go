package childproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Group is the children of one run, stopped together in reverse order.
// Its methods are called from one goroutine, the run's.
type Group struct {
	logDir string
	grace  time.Duration
	procs  []*Proc
}

// NewGroup returns an empty Group whose children write their output to
// logDir/name.log and are killed when they have not ended grace after
// SIGTERM.
func NewGroup(logDir string, grace time.Duration) *Group {
	return &Group{logDir: logDir, grace: grace}
}

// LogDir is the folder of the children's log files.
func (g *Group) LogDir() string { return g.logDir }

// Start starts path with args as name, in a process group of its own, its
// stdout and stderr to LogDir/name.log, and adds it to the group. It fails,
// starting nothing, when the log file cannot be created or the program
// cannot be started.
func (g *Group) Start(name, path string, args ...string) (*Proc, error) {
	logPath := filepath.Join(g.logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("log file for %s: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, path, err)
	}
	p := &Proc{name: name, cmd: cmd, logPath: logPath, grace: g.grace, exited: make(chan struct{})}
	// This goroutine is owned by p: it ends when the process does, and
	// Stop waits for it.
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	g.procs = append(g.procs, p)
	return p, nil
}

// StopAll stops every child, the last started first, and returns what
// each became, in the order they were started.
func (g *Group) StopAll() []Record {
	for i := len(g.procs) - 1; i >= 0; i-- {
		g.procs[i].Stop()
	}
	recs := make([]Record, 0, len(g.procs))
	for _, p := range g.procs {
		recs = append(recs, p.Record())
	}
	return recs
}
