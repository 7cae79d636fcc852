package main

import (
	"context"
	"fmt"
	"io"
	"time"
)

// compareView shows both runs while the burst lasts and keeps the peaks
// it saw: the lone engine's waiting queue, and slotgate's slots, queue and
// requests before their first token.
type compareView struct {
	o                   options
	out                 io.Writer
	aloneURL, behindURL string
	sg                  slotgateURLs
	probe               *refusalProbe

	alone, behind         engineSample
	last                  sample
	peakAloneWaiting      float64
	peakBehindWaiting     float64
	maxEngine, maxQueue   float64
	maxWaiting            float64
	lastPrint, startedAt  time.Time
	sampleEvery, printGap time.Duration
}

func newCompareView(o options, out io.Writer, aloneURL, behindURL string, sg slotgateURLs) *compareView {
	return &compareView{
		o: o, out: out, aloneURL: aloneURL, behindURL: behindURL, sg: sg,
		probe: &refusalProbe{url: sg.proxy + "/v1/completions"},
		// 200 ms catches the peaks well enough while keeping five scrapes a
		// tick cheap on two cores.
		sampleEvery: 200 * time.Millisecond, printGap: time.Second,
	}
}

// run samples until done is closed or ctx ends.
func (v *compareView) run(ctx context.Context, done <-chan struct{}) {
	t := time.NewTicker(v.sampleEvery)
	defer t.Stop()
	v.startedAt = time.Now()
	for {
		v.sample(ctx)
		// A line a second, on a terminal too: two runs do not fit in one
		// rewritten line of 80 columns.
		if time.Since(v.lastPrint) >= v.printGap {
			v.print()
			v.lastPrint = time.Now()
		}
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample reads the three processes' metrics; a failed scrape keeps the
// last values, since a busy 2-core machine may delay one now and then.
func (v *compareView) sample(ctx context.Context) {
	if s, err := scrapeEngine(ctx, v.aloneURL); err == nil {
		v.alone = s
		v.peakAloneWaiting = max(v.peakAloneWaiting, s.waiting)
	}
	if s, err := scrapeEngine(ctx, v.behindURL); err == nil {
		v.behind = s
		v.peakBehindWaiting = max(v.peakBehindWaiting, s.waiting)
	}
	if s, err := scrape(ctx, v.sg.admin); err == nil {
		v.last = s
		v.maxEngine, v.maxQueue, v.maxWaiting = max(v.maxEngine, s.engine), max(v.maxQueue, s.queue), max(v.maxWaiting, s.waiting)
		if s.queue >= float64(v.o.queue) {
			v.probe.try(ctx)
		}
	}
}

func (v *compareView) print() {
	s := v.last
	prefill := fmt.Sprintf("%.0f", s.waiting)
	if v.o.waiting > 0 {
		prefill = fmt.Sprintf("%.0f/%d", s.waiting, v.o.waiting)
	}
	fmt.Fprintf(v.out, "  %5.1fs  without: running %2.0f, waiting %4.0f   with slotgate: slots %s, prefill %s, queue %s, refused %.0f\n",
		time.Since(v.startedAt).Seconds(), v.alone.running, v.alone.waiting,
		bar(s.engine, v.o.slots), prefill, bar(s.queue, v.o.queue), s.rejected)
}
