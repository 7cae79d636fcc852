package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slotgate/slotgate/internal/childproc"
)

// config is one slotgate configuration under test.
type config struct {
	Key  string   `json:"key"`  // its --configs name: n, nw, np or nwp
	Name string   `json:"name"` // its limits, for the table
	Args []string `json:"slotgate_args"`
}

// configKeys are the configurations --configs may name, in table order.
var configKeys = []string{"n", "nw", "np", "nwp"}

// configFor returns the configuration key names, from o's limits.
func configFor(key string, o options) config {
	n, q := strconv.Itoa(o.slots), strconv.Itoa(o.queue)
	w, p := strconv.Itoa(o.waiting), strconv.Itoa(o.prefillTokens)
	c := config{Key: key, Name: "N=" + n, Args: []string{"--engine-request-limit", n, "--request-queue-limit", q}}
	if strings.Contains(key, "w") {
		c.Name += " W=" + w
		c.Args = append(c.Args, "--engine-request-waiting-limit", w)
	}
	if strings.Contains(key, "p") {
		c.Name += " P=" + p
		c.Args = append(c.Args, "--engine-prefill-token-limit", p)
	}
	c.Name += " Q=" + q
	return c
}

// runAll runs every configuration --reps times, interleaved (each rep
// runs all of them) so that a slow spell of the machine falls on all
// alike, and returns each one's runs in the order of cfgs.
func runAll(ctx context.Context, o options, cfgs []config, arrivals []arrival, out io.Writer) ([][]configResult, error) {
	runs := make([][]configResult, len(cfgs))
	for rep := range o.reps {
		for i, c := range cfgs {
			r, err := runOne(ctx, o, c, arrivals)
			if err != nil {
				return nil, fmt.Errorf("%s, run %d: %w", c.Name, rep+1, err)
			}
			fmt.Fprintf(out, "run %d/%d %-22s short TTFT p50 %6.0f ms p99 %6.0f ms; huge p50 %6.0f ms; short served %v of %v\n",
				rep+1, o.reps, c.Name, r.Short.TTFTP50, r.Short.TTFTP99, r.Huge.TTFTP50, r.Short.Served, r.Short.Sent)
			runs[i] = append(runs[i], r)
		}
	}
	return runs, nil
}

// runOne starts a fresh enginesim and slotgate with c, sends the arrivals
// and stops both, whatever happens; their logs are kept only on failure.
func runOne(ctx context.Context, o options, c config, arrivals []arrival) (configResult, error) {
	logDir, err := os.MkdirTemp("", "slotgate-tokenbench-")
	if err != nil {
		return configResult{}, fmt.Errorf("log folder: %w", err)
	}
	group := childproc.NewGroup(logDir, stopGrace)
	defer group.StopAll()
	r, err := measure(ctx, o, c, arrivals, group)
	if err != nil {
		return r, fmt.Errorf("%w (logs in %s)", err, logDir)
	}
	group.StopAll()
	os.RemoveAll(logDir)
	return r, nil
}

func measure(ctx context.Context, o options, c config, arrivals []arrival, group *childproc.Group) (configResult, error) {
	p, err := startPair(ctx, group, o.bin, o.engine, c.Args)
	if err != nil {
		return configResult{}, err
	}
	s := newSender(p.proxy, o.workload.Seed, o.deadline)
	defer s.close()
	recs := drive(ctx, s, arrivals)
	if err := ctx.Err(); err != nil {
		return configResult{}, err
	}
	peak, err := scrapeValue(ctx, p.engine+"/enginesim/metrics", "enginesim_requests_before_first_token_max")
	if err != nil {
		return configResult{}, err
	}
	return configResult{Short: summarize(recs, kindShort), Huge: summarize(recs, kindHuge), EnginePeakBeforeFirstToken: peak}, nil
}

// drive sends each arrival at its offset from now, each on a goroutine of
// its own that ends within the sender's deadline, and returns their
// records once all ended. When ctx ends it stops sending: the arrivals
// not sent have zero records, which no class counts.
func drive(ctx context.Context, s *sender, arrivals []arrival) []record {
	recs := make([]record, len(arrivals))
	var wg sync.WaitGroup
	defer wg.Wait()
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i, a := range arrivals {
		timer.Reset(time.Until(start.Add(a.At)))
		select {
		case <-ctx.Done():
			return recs
		case <-timer.C:
		}
		wg.Go(func() { recs[i] = s.send(ctx, a) })
	}
	return recs
}
