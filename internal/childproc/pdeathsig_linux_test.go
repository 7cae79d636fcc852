package childproc_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/childproc"
)

// TestParentDeathKillsChild: a child's child started with a Group dies
// with its parent, even when the parent is killed with SIGKILL and stops
// nothing (Pdeathsig).
func TestParentDeathKillsChild(t *testing.T) {
	h := newHolder(t)
	dir := t.TempDir()
	g := childproc.NewGroup(dir, time.Minute)
	p := start(t, g, child{name: "spawner", mode: "spawn-group", env: append(h.env(), envLogDir, dir)})
	h.waitOpened(t)
	if err := syscall.Kill(p.PID(), syscall.SIGKILL); err != nil { // the parent alone, not its group
		t.Fatal(err)
	}
	h.waitClosed(t, "its parent was killed")
}
