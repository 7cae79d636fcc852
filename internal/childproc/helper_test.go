package childproc_test

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/childproc"
)

// The tests' children are this test binary run again, in the mode that
// envMode names; see actAsChild.
const (
	envMode    = "CHILDPROC_TEST_MODE"
	envStopped = "CHILDPROC_TEST_STOPPED" // file the "listen" mode appends its name to on SIGTERM
	envName    = "CHILDPROC_TEST_NAME"
	envFIFO    = "CHILDPROC_TEST_FIFO"    // FIFO the "hold" mode keeps open for writing
	envLogDir  = "CHILDPROC_TEST_LOG_DIR" // where "spawn-group" has its grandchild log
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envMode); mode != "" {
		os.Exit(actAsChild(mode))
	}
	os.Exit(m.Run())
}

// actAsChild is the body of a child started by a test:
//
//   - listen: logs a listening line, and on SIGTERM appends its name to
//     the file envStopped names and exits 0;
//   - exit: writes a line and exits 3 at once;
//   - stubborn: ignores SIGTERM, logs a listening line and waits;
//   - spawn: starts a "hold" grandchild in its own process group, logs a
//     listening line and waits; SIGTERM ends it;
//   - spawn-group: the same, the grandchild started with a Group;
//   - hold: opens the FIFO envFIFO names for writing and waits; SIGTERM
//     ends it.
func actAsChild(mode string) int {
	switch mode {
	case "listen":
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		logListening()
		<-term
		return appendStopped()
	case "exit":
		fmt.Println("bye")
		return 3
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		logListening()
	case "spawn", "spawn-group":
		if err := spawnHold(mode == "spawn-group"); err != nil {
			fmt.Println(err)
			return 1
		}
		logListening()
	case "hold":
		f, err := os.OpenFile(os.Getenv(envFIFO), os.O_WRONLY, 0)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		defer f.Close()
	default:
		fmt.Println("unknown mode", mode)
		return 2
	}
	waitForever()
	return 0
}

func logListening() {
	fmt.Printf(`{"level":"info","msg":"listening","addr":"127.0.0.1:1","name":%q}`+"\n", os.Getenv(envName))
}

func appendStopped() int {
	f, err := os.OpenFile(os.Getenv(envStopped), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 1
	}
	defer f.Close()
	fmt.Fprintln(f, os.Getenv(envName))
	return 0
}

// spawnHold starts this binary again in mode "hold", its output to this
// process's, either plainly (in this process's group) or with a Group
// (in a group of its own, with Pdeathsig on Linux).
func spawnHold(withGroup bool) error {
	os.Setenv(envMode, "hold")
	if withGroup {
		_, err := childproc.NewGroup(os.Getenv(envLogDir), time.Second).Start("hold", os.Args[0])
		return err
	}
	cmd := exec.Command(os.Args[0])
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Start()
}

// waitForever blocks until a signal ends the process. A signal it is
// notified of keeps the runtime from calling the wait a deadlock.
func waitForever() {
	never := make(chan os.Signal, 1)
	signal.Notify(never, syscall.SIGUSR2)
	<-never
}

// child describes one child a test starts: its mode, and more of its
// environment.
type child struct {
	name, mode string
	env        []string
}

// start starts c in g: this binary, in c's mode, named c.name.
func start(t *testing.T, g *childproc.Group, c child) *childproc.Proc {
	t.Helper()
	t.Setenv(envMode, c.mode) // inherited by the child, never read by the test itself
	t.Setenv(envName, c.name)
	// A child built with -race sleeps a second at exit unless told not to.
	if gorace := os.Getenv("GORACE"); !strings.Contains(gorace, "atexit_sleep_ms") {
		t.Setenv("GORACE", strings.TrimSpace(gorace+" atexit_sleep_ms=0"))
	}
	for i := 0; i+1 < len(c.env); i += 2 {
		t.Setenv(c.env[i], c.env[i+1])
	}
	p, err := g.Start(c.name, os.Args[0])
	if err != nil {
		t.Fatalf("start %s: %v", c.name, err)
	}
	t.Cleanup(p.Stop)
	return p
}
