package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/slotgate/slotgate/internal/flagenv"
	"github.com/slotgate/slotgate/loadgen"
	"github.com/slotgate/slotgate/loadgen/grpcload"
)

// config is the validated command line and environment.
type config struct {
	// opts are the generator's options, progress output excepted.
	opts loadgen.Options
	// grpcURL is --url with --grpc, the gRPC server's http://host:port;
	// "" over HTTP, when opts.URL is the URL instead.
	grpcURL string
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
	var (
		r raw
		c config
	)
	fs := flag.NewFlagSet("slotgate-loadgen", flag.ContinueOnError)
	flagenv.AddVersion(fs, &c.showVersion)
	sources, err := flagenv.Parse(fs, &r, args, environ)
	if err != nil {
		return config{}, err
	}
	c.sources = sources
	v := newChecker(sources)
	c.fill(&r, v)
	return c, v.Err()
}

func (c *config) fill(r *raw, v *flagenv.Checker) {
	o := &c.opts
	o.Mode = loadgen.Mode(v.OneOf("mode", r.Mode, string(loadgen.Closed), string(loadgen.Open)))
	c.fillShape(r, v)
	o.Seed = seed(v, "seed", r.Seed)
	if r.Requests != "" { // no default: unset is 0
		o.Requests = positive(v, "requests", r.Requests)
	}
	if r.Duration != "" { // no default: unset is 0
		o.Duration = v.Duration("duration", r.Duration, 1)
	}
	if r.Requests == "" && r.Duration == "" {
		v.Fail("requests", r.Requests, "at least one of "+v.Name("requests")+" and "+v.Name("duration")+" must be set")
	}
	o.DrainTimeout = v.Duration("drain-timeout", r.DrainTimeout, 0)
	if v.Bool("grpc", r.GRPC) {
		c.fillGRPC(r, v)
	} else {
		o.URL = url(v, "url", r.URL)
		o.Endpoint = v.OneOf("endpoint", r.Endpoint, loadgen.EndpointCompletions, loadgen.EndpointChat)
		o.Model = v.NonEmpty("model", r.Model)
		o.APIKey = r.APIKey
	}
	o.Stream = v.Bool("stream", r.Stream)
	o.PromptTokens = dist(v, "prompt-tokens", r.PromptTokens)
	o.MaxTokens = dist(v, "max-tokens", r.MaxTokens)
	o.Timeout = v.Duration("timeout", r.Timeout, 0)
	o.Retry = integer(v, "retry", r.Retry, 1, loadgen.MaxRetry)
	if r.Deadline != "" { // no default: unset is none
		o.Deadline = v.Duration("deadline", r.Deadline, 0)
	}
	c.jsonPath = r.JSON
	o.ProgressInterval = v.Duration("progress-interval", r.ProgressInterval, 0)
	if o.ProgressInterval > 0 && o.ProgressInterval < minProgressInterval {
		v.Fail("progress-interval", r.ProgressInterval, fmt.Sprintf("must be 0 or at least %v", minProgressInterval))
	}
}

// fillShape reads the settings of the chosen mode. A setting of the other
// mode, when given explicitly, is a mistake worth stopping for: --rate
// without --mode open would otherwise run a closed loop unnoticed.
func (c *config) fillShape(r *raw, v *flagenv.Checker) {
	o := &c.opts
	switch o.Mode {
	case loadgen.Closed:
		o.Concurrency = integer(v, "concurrency", r.Concurrency, 1, loadgen.MaxConcurrency)
		onlyWith(v, "rate", r.Rate, "open")
		onlyWith(v, "max-outstanding", r.MaxOutstanding, "open")
	case loadgen.Open:
		o.Rate = rate(v, "rate", r.Rate)
		o.MaxOutstanding = integer(v, "max-outstanding", r.MaxOutstanding, 1, loadgen.MaxConcurrency)
		onlyWith(v, "concurrency", r.Concurrency, "closed")
	}
}

// fillGRPC reads --url as a gRPC server's, for run to make the Sender. The
// HTTP request's settings, given explicitly, are mistakes worth stopping
// for, as a setting of the other mode is: gRPC's Generate has no endpoint,
// model or API key.
func (c *config) fillGRPC(r *raw, v *flagenv.Checker) {
	if _, err := grpcload.ParseURL(r.URL); err != nil {
		v.Fail("url", r.URL, err.Error()+", with "+v.Name("grpc"))
	} else {
		c.grpcURL = strings.TrimSpace(r.URL)
	}
	for _, s := range []struct{ flag, value string }{
		{"endpoint", r.Endpoint}, {"model", r.Model}, {"api-key", r.APIKey},
	} {
		if v.Explicit(s.flag) {
			v.Fail(s.flag, s.value, "is only used over HTTP (without "+v.Name("grpc")+")")
		}
	}
}
