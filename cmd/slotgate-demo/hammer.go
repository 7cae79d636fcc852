package main

import (
	"fmt"
	"io"
	"strconv"
)

// hammer is the original demo: enginesim and slotgate (N, Q, no W), and a
// closed loop of o.concurrency streams, each sending its next request the
// moment one ends or is refused, so a saturated slotgate refuses thousands
// a second. It shows the exact cap N+Q under the harshest client.
func hammer(s *stack, out io.Writer) error {
	o := s.o
	engineURL, err := s.startEngine("enginesim")
	if err != nil {
		return err
	}
	sg, err := s.startSlotgate(engineURL, false)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "enginesim (%d sequences) at %s\nslotgate (N=%d, Q=%d) at %s, admin %s\n",
		o.slots, engineURL, o.slots, o.queue, sg.proxy, sg.admin)
	fmt.Fprintf(out, "Driving %d concurrent streams for %s: %d more than N+Q can hold.\n\n",
		o.concurrency, o.duration, o.concurrency-o.slots-o.queue)
	lg, resultPath, err := s.startLoadgen("slotgate-loadgen", sg.proxy, "--mode", "closed",
		"--concurrency", strconv.Itoa(o.concurrency), "--duration", o.duration.String())
	if err != nil {
		return err
	}
	w := &watcher{o: o, adminURL: sg.admin, out: out, terminal: isTerminal(out)}
	w.run(s.ctx, lg.Exited())
	if s.ctx.Err() != nil {
		return nil // Ctrl-C: the deferred clean-up stops everything
	}
	if err := loadgenDone(lg); err != nil {
		return err
	}
	res, err := readLoadReport(resultPath)
	if err != nil {
		return err
	}
	final, err := scrape(s.ctx, sg.admin)
	if err != nil {
		return err
	}
	sum := newSummary(o, res, w, final)
	sum.print(out)
	if o.summaryJSON != "" {
		if err := writeJSON(o.summaryJSON, sum); err != nil {
			return err
		}
	}
	return sum.check()
}
