package command

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/admission/builtin"
	"github.com/slotgate/slotgate/config"
	"github.com/slotgate/slotgate/internal/flagenv"
	"github.com/slotgate/slotgate/internal/logging"
)

// Options are what a main package gives Main.
type Options struct {
	// Version and Commit are printed by --version and logged at start.
	Version, Commit string
	// Registry holds the admission classifiers a configuration file may
	// name; nil means the built-in ones only (NewRegistry).
	Registry *admission.Registry
}

// Main runs slotgate with the process's arguments, environment and
// signals, and returns its exit status: 0 after a clean drain, 1 when
// running failed, 2 when the configuration was refused.
func Main(opts Options) int {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	return Run(opts, os.Args[1:], flagenv.Environ(os.Environ()), os.Stdout, os.Stderr, signals)
}

// Run is Main with everything it reads given: the arguments (without the
// program name), the environment, the output streams and the signals.
func Run(opts Options, args []string, env map[string]string, stdout, stderr io.Writer, signals <-chan os.Signal) int {
	if len(args) > 0 && args[0] == "drain" {
		return runDrain(args[1:], env, stdout, stderr)
	}
	opts = opts.withDefaults()
	cfg, err := config.Load(args, env)
	switch {
	case errors.Is(err, flag.ErrHelp):
		config.Usage(stdout)
		return 0
	case cfg.ShowVersion:
		fmt.Fprintf(stdout, "slotgate %s (%s)\n", opts.Version, opts.Commit)
		return 0
	case err != nil:
		flagenv.Report(stderr, "slotgate", err)
		return 2
	}
	gogc, err := readGOGC(env)
	if err != nil {
		flagenv.Report(stderr, "slotgate", err)
		return 2
	}
	if cfg.MaxProcs > 0 {
		// Before anything starts: the relay sizes its loops by it.
		runtime.GOMAXPROCS(cfg.MaxProcs)
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
	pol, err := loadPolicy(cfg, opts)
	if err != nil {
		flagenv.Report(stderr, "slotgate", fmt.Errorf("%s: %w", flagName(cfg, "admission-config"), err))
		return 2
	}
	logConfig(log, cfg, opts)
	defer collectorPace(gogc, log)()
	if pol != nil {
		log.Info("admission policy", zap.String("file", pol.Path), zap.String("classifier", pol.ClassifierType),
			zap.Strings("classes", classNames(pol)), zap.String("default_class", pol.DefaultClass))
	}
	access, stopAccess, err := accessLog(cfg, stderr)
	if err != nil {
		log.Error("start-up failed", zap.Error(err))
		return 1
	}
	defer func() { _ = stopAccess() }()
	a, err := newApp(cfg, opts, pol, log, access)
	var refused configError
	switch {
	case errors.As(err, &refused):
		flagenv.Report(stderr, "slotgate", err)
		return 2
	case err != nil:
		log.Error("start-up failed", zap.Error(err))
		return 1
	}
	defer a.relayProcessors()()
	return a.run(signals)
}

func (o Options) withDefaults() Options {
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Commit == "" {
		o.Commit = "unknown"
	}
	if o.Registry == nil {
		o.Registry = NewRegistry()
	}
	return o
}

// NewRegistry returns a registry holding the built-in classifiers, for a
// main package to add its own to before calling Main.
func NewRegistry() *admission.Registry {
	r := admission.NewRegistry()
	if err := builtin.Register(r); err != nil {
		panic("command: the built-in classifiers collide: " + err.Error()) // a bug, caught by every test
	}
	return r
}

// flagName is how a setting was given: the flag, or its variable.
func flagName(cfg config.Config, flag string) string {
	if src := cfg.Sources[flag]; src != "" && src != "flag" && src != "default" {
		return src
	}
	return "--" + flag
}
