package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// watcher shows slotgate's state while the burst runs and keeps the
// highest values it saw.
type watcher struct {
	o                   options
	adminURL            string
	out                 io.Writer
	terminal            bool
	maxEngine, maxQueue float64
	last                sample
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// run samples every 100 ms until done is closed or ctx ends.
func (w *watcher) run(ctx context.Context, done <-chan struct{}) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	start := time.Now()
	lastPrint := time.Time{}
	for {
		if s, err := scrape(ctx, w.adminURL); err == nil {
			w.last = s
			w.maxEngine, w.maxQueue = max(w.maxEngine, s.engine), max(w.maxQueue, s.queue)
		}
		if w.terminal || time.Since(lastPrint) >= time.Second {
			w.print(time.Since(start))
			lastPrint = time.Now()
		}
		select {
		case <-done:
			if w.terminal {
				fmt.Fprintln(w.out)
			}
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (w *watcher) print(elapsed time.Duration) {
	s := w.last
	line := fmt.Sprintf("  %5.1fs  slots %s  queue %s  rejected %-6.0f  served %.0f (direct %.0f, from queue %.0f)",
		elapsed.Seconds(), bar(s.engine, w.o.slots), bar(s.queue, w.o.queue), s.rejected, s.direct+s.queued, s.direct, s.queued)
	if w.terminal {
		fmt.Fprintf(w.out, "\r%s\033[K", line)
	} else {
		fmt.Fprintln(w.out, line)
	}
}

// bar draws used out of total as "[####....] 4/8".
func bar(used float64, total int) string {
	b := make([]byte, total)
	for i := range b {
		b[i] = '.'
		if float64(i) < used {
			b[i] = '#'
		}
	}
	return fmt.Sprintf("[%s] %2.0f/%d", b, used, total)
}
