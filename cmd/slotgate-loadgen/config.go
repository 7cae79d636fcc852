package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/caarlos0/env/v11"

	"github.com/slotgate/slotgate/loadgen"
)

// config is the validated command line and environment.
type config struct {
	// opts are the generator's options, progress output excepted.
	opts loadgen.Options
	// jsonPath is --json: "" for none, "-" for stdout.
	jsonPath string
	// showVersion is set by --version.
	showVersion bool
	// sources maps each flag name to where its value came from: "flag",
	// the environment variable's name, or "default".
	sources map[string]string
}

// load parses args (without the program name) and environ, a map of
// environment variables, with flags over variables over defaults; a
// variable set to "" counts as unset. It returns flag.ErrHelp for -h or
// --help, and otherwise an error joining every problem found, one per line,
// each naming the flag or variable that gave the value and the value.
func load(args []string, environ map[string]string) (config, error) {
	if environ == nil {
		environ = map[string]string{} // env reads os.Environ when given nil
	}
	var r raw
	if err := env.ParseWithOptions(&r, env.Options{Environment: environ}); err != nil {
		return config{}, fmt.Errorf("read environment: %w", err)
	}
	list := settings(&r)
	fs := flag.NewFlagSet("slotgate-loadgen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, s := range list {
		if s.isBool {
			fs.Var(boolFlag{s.value}, s.flag, s.usage)
		} else {
			fs.StringVar(s.value, s.flag, *s.value, s.usage)
		}
	}
	var c config
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return config{}, err
		}
		return config{}, fmt.Errorf("command line: %w", err)
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("command line: unexpected argument %q", fs.Arg(0))
	}
	c.sources = sources(fs, list, environ)
	v := validator{sources: c.sources}
	c.fill(&r, &v)
	return c, errors.Join(v.errs...)
}

// sources records where each setting's value came from.
func sources(fs *flag.FlagSet, list []setting, environ map[string]string) map[string]string {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	out := make(map[string]string, len(list))
	for _, s := range list {
		switch {
		case set[s.flag]:
			out[s.flag] = "flag"
		case environ[s.env] != "":
			out[s.flag] = s.env
		default:
			out[s.flag] = "default"
		}
	}
	return out
}

func (c *config) fill(r *raw, v *validator) {
	o := &c.opts
	o.Mode = loadgen.Mode(v.oneOf("mode", r.Mode, string(loadgen.Closed), string(loadgen.Open)))
	c.fillShape(r, v)
	o.Seed = v.seed("seed", r.Seed)
	o.Requests = v.positive("requests", r.Requests)
	o.Duration = v.duration("duration", r.Duration, 1)
	if r.Requests == "" && r.Duration == "" {
		v.fail("requests", r.Requests, "at least one of "+v.name("requests")+" and "+v.name("duration")+" must be set")
	}
	o.DrainTimeout = v.duration("drain-timeout", r.DrainTimeout, 0)
	o.URL = v.url("url", r.URL)
	o.Endpoint = v.oneOf("endpoint", r.Endpoint, loadgen.EndpointCompletions, loadgen.EndpointChat)
	o.Model = v.nonEmpty("model", r.Model)
	o.Stream = v.boolean("stream", r.Stream)
	o.PromptTokens = v.dist("prompt-tokens", r.PromptTokens)
	o.MaxTokens = v.dist("max-tokens", r.MaxTokens)
	o.Timeout = v.duration("timeout", r.Timeout, 0)
	o.APIKey = r.APIKey
	c.jsonPath = r.JSON
	o.ProgressInterval = v.duration("progress-interval", r.ProgressInterval, 0)
	if o.ProgressInterval > 0 && o.ProgressInterval < minProgressInterval {
		v.fail("progress-interval", r.ProgressInterval, fmt.Sprintf("must be 0 or at least %v", minProgressInterval))
	}
}

// fillShape reads the settings of the chosen mode. A setting of the other
// mode, when given explicitly, is a mistake worth stopping for: --rate
// without --mode open would otherwise run a closed loop unnoticed.
func (c *config) fillShape(r *raw, v *validator) {
	o := &c.opts
	switch o.Mode {
	case loadgen.Closed:
		o.Concurrency = v.integer("concurrency", r.Concurrency, 1, loadgen.MaxConcurrency)
		v.onlyWith("rate", r.Rate, "open")
		v.onlyWith("max-outstanding", r.MaxOutstanding, "open")
	case loadgen.Open:
		o.Rate = v.rate("rate", r.Rate)
		o.MaxOutstanding = v.integer("max-outstanding", r.MaxOutstanding, 1, loadgen.MaxConcurrency)
		v.onlyWith("concurrency", r.Concurrency, "closed")
	}
}
