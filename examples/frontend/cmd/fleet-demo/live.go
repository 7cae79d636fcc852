package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/slotgate/slotgate/examples/frontend/router"
)

// liveView prints, once a second, one line per worker as the frontend
// sees it and one for the frontend's own counters.
type liveView struct {
	out io.Writer
	url string // the frontend's
}

// run prints until done is closed or ctx ends, and returns the frontend's
// stats read last, after done.
func (v *liveView) run(ctx context.Context, done <-chan struct{}) router.Stats {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	start := time.Now()
	var last router.Stats
	for {
		select {
		case <-done:
			_, _ = getJSON(ctx, v.url+"/frontend/stats", &last)
			return last
		case <-ctx.Done():
			return last
		case <-tick.C:
		}
		if _, err := getJSON(ctx, v.url+"/frontend/stats", &last); err == nil {
			v.print(time.Since(start), last)
		}
	}
}

func (v *liveView) print(elapsed time.Duration, st router.Stats) {
	fmt.Fprintf(v.out, "  %4.1fs  frontend  requests %-5d excluded %-5d retried %-4d 529 absorbed %-4d 529 to clients %d\n",
		elapsed.Seconds(), st.Requests, st.Exclusions, st.Retries, st.Absorbed529, st.Client529)
	for _, w := range st.Workers {
		fmt.Fprintf(v.out, "         %-9s %s\n", w.Name, workerLine(w))
	}
}

// workerLine is a worker's load: slots, prefill, queue, KV use, busy.
func workerLine(w router.WorkerStats) string {
	l := w.Load
	if l == nil {
		return w.State
	}
	kv := "  ?"
	if l.KVUsage >= 0 {
		kv = fmt.Sprintf("%3.0f%%", l.KVUsage*100)
	}
	flags := []string{}
	if w.State != "fresh" {
		flags = append(flags, w.State)
	}
	if w.Busy {
		flags = append(flags, "BUSY")
	}
	if w.Marked {
		flags = append(flags, "marked")
	}
	return fmt.Sprintf("slots %s  prefill %d/%d  queue %d/%d  KV %s  %s",
		bar(l.InFlight, l.Limit), l.Prefilling, l.WaitingLimit, l.Queued, l.QueueLimit, kv, strings.Join(flags, " "))
}

// bar draws used out of total as "[####....] 4/8".
func bar(used, total int) string {
	b := make([]byte, max(total, 0))
	for i := range b {
		b[i] = '.'
		if i < used {
			b[i] = '#'
		}
	}
	return fmt.Sprintf("[%s] %d/%d", b, used, total)
}
