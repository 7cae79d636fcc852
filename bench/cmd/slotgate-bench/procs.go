package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// procs owns every process the driver starts, each in its own process
// group, so that stopAll (deferred in main, also after Ctrl-C) leaves none
// behind.
type procs struct {
	mu   sync.Mutex
	live map[*exec.Cmd]chan struct{} // closed when the process has exited
}

func newProcs() *procs { return &procs{live: map[*exec.Cmd]chan struct{}{}} }

// start runs path with args, its output appended to logPath, or its
// standard output written to stdout when that is not nil (the driver reads
// its own children's reports through a pipe). The returned channel is
// closed when the process exits.
func (p *procs) start(logPath string, stdout *os.File, path string, args ...string) (*exec.Cmd, <-chan struct{}, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if stdout != nil {
		cmd.Stdout = stdout
	}
	// Its own process group, so that a terminal's Ctrl-C reaches only the
	// driver, which then stops every child in order; Pdeathsig, so that a
	// child does not outlive a driver killed without a chance to clean up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, nil, fmt.Errorf("start %s: %w", path, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait() //nolint:errcheck // an exit is noticed through done
		log.Close()
		close(done)
	}()
	p.mu.Lock()
	p.live[cmd] = done
	p.mu.Unlock()
	return cmd, done, nil
}

// stop sends SIGTERM to cmd's process group, then SIGKILL after 3 s.
func (p *procs) stop(cmd *exec.Cmd) { p.signal(cmd, syscall.SIGTERM) }

// kill sends SIGKILL to cmd's process group at once, the way a client
// process dies: every socket it held is closed by the kernel together.
func (p *procs) kill(cmd *exec.Cmd) { p.signal(cmd, syscall.SIGKILL) }

func (p *procs) signal(cmd *exec.Cmd, sig syscall.Signal) {
	p.mu.Lock()
	done, ok := p.live[cmd]
	delete(p.live, cmd)
	p.mu.Unlock()
	if !ok {
		return
	}
	syscall.Kill(-cmd.Process.Pid, sig) //nolint:errcheck // it may be gone
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) //nolint:errcheck // it may be gone
		<-done
	}
}

func (p *procs) stopAll() {
	p.mu.Lock()
	var all []*exec.Cmd
	for c := range p.live {
		all = append(all, c)
	}
	p.mu.Unlock()
	for _, c := range all {
		p.stop(c)
	}
}

// freePort asks the kernel for a free port on 127.0.0.1.
func freePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// freePorts returns n distinct free TCP ports on 127.0.0.1, for one
// process that listens on several: each is held until all are chosen,
// since a port closed is free for the next to be given again (a slotgate
// once got the same port for --listen and --admin-listen, and refused to
// start).
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// tail returns the last n bytes of the file at path, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

var errExited = errors.New("exited before it was ready")
