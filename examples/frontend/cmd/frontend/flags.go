package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/slotgate/slotgate/examples/frontend/router"
	"github.com/slotgate/slotgate/load/watch"
)

// options are the frontend's settings, from its flags.
type options struct {
	listen   string
	workers  []router.Worker
	policy   router.Policy
	cooldown time.Duration
	retries  int
	logLevel slog.Level
}

// workerFlags collects the repeatable --worker flag.
type workerFlags struct{ workers *[]router.Worker }

func (f workerFlags) String() string { return "" }

func (f workerFlags) Set(s string) error {
	w, err := router.ParseWorker(s)
	if err != nil {
		return err
	}
	*f.workers = append(*f.workers, w)
	return nil
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	var policy, level string
	fs := flag.NewFlagSet("frontend", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8070", "address to serve on; port 0 picks a free port, logged in the \"listening\" line")
	fs.Var(workerFlags{&o.workers}, "worker", "a worker: proxy=URL,admin=URL[,name=NAME], slotgate's proxy and admin base URLs; repeat for each")
	fs.StringVar(&policy, "policy", string(router.PolicyLoad), "load: leave out busy and marked workers, pick the least loaded; roundrobin: rotate blindly")
	fs.DurationVar(&o.cooldown, "cooldown", router.DefaultCooldown, "how long a worker's 529 keeps it marked overloaded (policy load)")
	fs.IntVar(&o.retries, "retries", 2, "how many times a request refused with 529 is sent again, each time to another worker")
	fs.StringVar(&level, "log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	o.policy = router.Policy(policy)
	if o.policy != router.PolicyLoad && o.policy != router.PolicyRoundRobin {
		errs = append(errs, fmt.Errorf("--policy %q: want load or roundrobin", policy))
	}
	if o.cooldown <= 0 {
		errs = append(errs, fmt.Errorf("--cooldown %s: want a positive duration", o.cooldown))
	}
	if o.retries < 0 {
		errs = append(errs, fmt.Errorf("--retries %d: want 0 or more", o.retries))
	}
	if err := o.logLevel.UnmarshalText([]byte(level)); err != nil {
		errs = append(errs, fmt.Errorf("--log-level %q: want debug, info, warn or error", level))
	}
	names := map[string]bool{}
	for _, w := range o.workers {
		if names[w.Name] {
			errs = append(errs, fmt.Errorf("--worker: name %q given twice (add name=NAME to tell them apart)", w.Name))
		}
		names[w.Name] = true
	}
	return o, errors.Join(errs...)
}

// watchOptions are the load watcher's: the defaults, logging through log.
func watchOptions(log *slog.Logger) watch.Options {
	return watch.Options{Logger: log.With("component", "watch")}
}
