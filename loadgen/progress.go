package loadgen

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// terminalInterval is how often the progress line is rewritten on a
// terminal.
const terminalInterval = 250 * time.Millisecond

// progress writes live progress: on a terminal one line rewritten with \r,
// otherwise a plain line per interval.
type progress struct {
	w        io.Writer
	interval time.Duration
	terminal bool
	rec      *recorder
	start    time.Time

	lastDone int64
	lastAt   time.Time
	lastLen  int // length of the line on screen, terminal only
}

// newProgress returns nil when progress is off.
func (g *Generator) newProgress(rec *recorder, start time.Time) *progress {
	if g.opts.Progress == nil || g.opts.ProgressInterval <= 0 {
		return nil
	}
	p := &progress{w: g.opts.Progress, interval: g.opts.ProgressInterval, terminal: g.opts.Terminal,
		rec: rec, start: start, lastAt: start}
	if p.terminal {
		p.interval = terminalInterval
	}
	return p
}

// run writes a line per interval until ctx ends; on a terminal it then
// writes the last state and ends the line.
func (p *progress) run(ctx context.Context) {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if p.terminal {
				p.write(time.Now())
				fmt.Fprintln(p.w)
			}
			return
		case now := <-t.C:
			p.write(now)
		}
	}
}

func (p *progress) write(now time.Time) {
	s := p.rec.snapshot()
	rate := 0.0
	if d := now.Sub(p.lastAt).Seconds(); d > 0 {
		rate = float64(s.done-p.lastDone) / d
	}
	p.lastDone, p.lastAt = s.done, now
	line := progressLine(s, now.Sub(p.start), rate)
	if !p.terminal {
		fmt.Fprintln(p.w, line)
		return
	}
	pad := max(p.lastLen-len(line), 0)
	p.lastLen = len(line)
	fmt.Fprint(p.w, "\r"+line+strings.Repeat(" ", pad))
}

// progressLine formats one progress report; rate is completions per second
// since the previous one.
func progressLine(s snapshot, elapsed time.Duration, rate float64) string {
	line := fmt.Sprintf("%7.1fs  sent %d  done %d  ok %d  rejected %d  errors %d  in flight %d  %.1f req/s",
		elapsed.Seconds(), s.sent, s.done, s.ok, s.rejected, s.failed, s.inFlight, rate)
	if s.dropped > 0 {
		line += fmt.Sprintf("  dropped %d", s.dropped)
	}
	return line
}
