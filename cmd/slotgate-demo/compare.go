package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/slotgate/slotgate/internal/childproc"
)

// burstSeed seeds both load generators alike, so that both runs get the
// same arrivals, prompts and lengths: the same burst.
const burstSeed = "1"

// compare sends the same burst to two identical engines at once, one
// alone and one behind slotgate, shows both while it runs and prints one
// table of the two runs. Running them side by side rather than one after
// the other halves the demo's time; each engine's timing is modelled, not
// measured, so they do not slow each other down at these rates.
func compare(s *stack, out io.Writer) error {
	o := s.o
	aloneURL, err := s.startEngine("enginesim-alone")
	if err != nil {
		return err
	}
	behindURL, err := s.startEngine("enginesim-behind-slotgate")
	if err != nil {
		return err
	}
	sg, err := s.startSlotgate(behindURL, true)
	if err != nil {
		return err
	}
	printCompareIntro(out, o, aloneURL, behindURL, sg)
	burstArgs := []string{"--mode", "open", "--rate", strconv.FormatFloat(o.rate, 'f', -1, 64),
		"--duration", o.duration.String(), "--seed", burstSeed,
		"--retry", strconv.Itoa(o.retry), "--deadline", o.deadline.String()}
	without, withoutPath, err := s.startLoadgen("loadgen-without-slotgate", aloneURL, burstArgs...)
	if err != nil {
		return err
	}
	with, withPath, err := s.startLoadgen("loadgen-with-slotgate", sg.proxy, burstArgs...)
	if err != nil {
		return err
	}
	v := newCompareView(o, out, aloneURL, behindURL, sg)
	v.run(s.ctx, bothExited(without, with))
	if s.ctx.Err() != nil {
		return nil // Ctrl-C: the deferred clean-up stops everything
	}
	c, err := collect(s, v, [2]*childproc.Proc{without, with}, [2]string{withoutPath, withPath}, aloneURL, behindURL, sg)
	if err != nil {
		return err
	}
	c.print(out)
	if o.summaryJSON != "" {
		if err := writeJSON(o.summaryJSON, c); err != nil {
			return err
		}
	}
	return c.check()
}

func printCompareIntro(out io.Writer, o options, aloneURL, behindURL string, sg slotgateURLs) {
	w := ""
	if o.waiting > 0 {
		w = fmt.Sprintf(", W=%d", o.waiting)
	}
	fmt.Fprintf(out, "Two identical engines: enginesim, %d sequences, its waiting queue unbounded as vLLM's is by default.\n", o.slots)
	fmt.Fprintf(out, "  without slotgate: %s\n  with slotgate:    %s (N=%d%s, Q=%d), admin %s, in front of %s\n",
		aloneURL, sg.proxy, o.slots, w, o.queue, sg.admin, behindURL)
	fmt.Fprintf(out, "The same burst to each: Poisson arrivals at %g/s for %s. Clients try %d times, honouring Retry-After,\n"+
		"and give up on a request at its %s deadline.\n\n", o.rate, o.duration, o.retry, o.deadline)
}

// bothExited is closed once both processes have exited.
func bothExited(a, b *childproc.Proc) <-chan struct{} {
	done := make(chan struct{})
	// Owned by the run: it ends when both load generators do, and the
	// run's clean-up stops them whatever happens.
	go func() {
		<-a.Exited()
		<-b.Exited()
		close(done)
	}()
	return done
}

// collect reads both load generators' reports and the final metrics.
func collect(s *stack, v *compareView, lgs [2]*childproc.Proc, paths [2]string, aloneURL, behindURL string, sg slotgateURLs) (comparison, error) {
	var reports [2]loadReport
	for i, lg := range lgs {
		if err := loadgenDone(lg); err != nil {
			return comparison{}, err
		}
		r, err := readLoadReport(paths[i])
		if err != nil {
			return comparison{}, err
		}
		reports[i] = r
	}
	final, err := scrape(s.ctx, sg.admin)
	if err != nil {
		return comparison{}, err
	}
	alone, err := scrapeEngine(s.ctx, aloneURL)
	if err != nil {
		return comparison{}, err
	}
	behind, err := scrapeEngine(s.ctx, behindURL)
	if err != nil {
		return comparison{}, err
	}
	return newComparison(s.o, reports, v, final, [2]engineSample{alone, behind}), nil
}
