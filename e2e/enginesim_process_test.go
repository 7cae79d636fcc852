package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/slotgate/slotgate/internal/testlog"
)

// enginesimProcess is one run of enginesim as a real process, which a
// test can kill as a crash would.
type enginesimProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	logs   *testlog.Buffer
	exited chan struct{} // closed once the process was waited for
}

// runEnginesim starts enginesim with args and returns the process and its
// "listening" line once it listens. The process is killed when the test
// ends, and its output logged, under what, if the test failed.
func runEnginesim(t *testing.T, what string, args ...string) (enginesimProcess, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "enginesim"), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	logs, exited := testlog.New(), make(chan struct{})
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start enginesim: %v", err)
	}
	go func() { _ = cmd.Wait(); logs.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("enginesim (%s) output:\n%s", what, logs.String())
		}
	})
	p := enginesimProcess{t: t, cmd: cmd, logs: logs, exited: exited}
	return p, logs.WaitFor(t, `"msg":"listening"`, waitLimit)
}

// kill sends SIGKILL, as a crash or the OOM killer would, and waits for
// the process to end.
func (p enginesimProcess) kill() {
	p.t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		p.t.Fatalf("kill enginesim: %v", err)
	}
	<-p.exited
}
