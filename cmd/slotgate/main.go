// Command slotgate is a sidecar reverse proxy that caps the requests reaching
// one inference engine: N engine slots, a FIFO overflow queue of Q, and an
// immediate overload answer beyond N+Q. See the README for its settings.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/config"
	"github.com/slotgate/slotgate/internal/flagenv"
	"github.com/slotgate/slotgate/internal/logging"
)

// Set with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

func main() {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	os.Exit(run(os.Args[1:], flagenv.Environ(os.Environ()), os.Stdout, os.Stderr, signals))
}

// run is the whole program; it returns the exit status: 0 after a clean
// drain, 1 when running failed, 2 when the configuration was refused.
func run(args []string, env map[string]string, stdout, stderr io.Writer, signals <-chan os.Signal) int {
	cfg, err := config.Load(args, env)
	switch {
	case errors.Is(err, flag.ErrHelp):
		config.Usage(stdout)
		return 0
	case cfg.ShowVersion:
		fmt.Fprintf(stdout, "slotgate %s (%s)\n", version, commit)
		return 0
	case err != nil:
		flagenv.Report(stderr, "slotgate", err)
		return 2
	}
	log, err := logging.New("slotgate", cfg.LogLevel, cfg.LogFormat, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "slotgate: "+err.Error())
		return 2
	}
	defer func() { _ = log.Sync() }()
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	logConfig(log, cfg)
	a, err := newApp(cfg, log)
	if err != nil {
		log.Error("start-up failed", zap.Error(err))
		return 1
	}
	return a.run(signals)
}
