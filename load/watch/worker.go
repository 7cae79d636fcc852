package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net/http"
	"time"

	"github.com/slotgate/slotgate/load/report"
)

// eventLoad is the event type of a snapshot on the stream.
const eventLoad = "load"

// errEnded is an attempt's error when the sidecar ended the stream.
var errEnded = errors.New("stream ended")

// worker is one watched worker.
type worker struct {
	name string
	url  string // the stream's
	log  *slog.Logger
	stop context.CancelFunc // ends the goroutine; nil until it starts
	done chan struct{}      // closed when the goroutine has ended

	// Guarded by Watcher.mu.
	snap         *report.Snapshot        // the newest accepted; nil while Unknown
	received     time.Time               // when snap arrived
	expired      bool                    // Run logged snap's expiry
	connected    bool                    // a stream is open
	drop         context.CancelCauseFunc // ends the current attempt; nil between attempts
	connDeadline time.Time               // when the current attempt is dropped as silent

	// Owned by the worker's goroutine.
	failing bool          // "unreachable" was logged; no stream delivered since
	retry   time.Duration // the sidecar's last retry field
}

// follow connects to wk's stream again and again, backing off between
// attempts, until ctx ends.
func (w *Watcher) follow(ctx context.Context, wk *worker) {
	bo := backoff{min: w.bmin, max: w.bmax}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		delivered, err := w.attempt(ctx, wk)
		if ctx.Err() != nil {
			return
		}
		switch {
		case delivered:
			wk.log.Warn("disconnected", "err", err)
			bo.reset()
		case !wk.failing:
			wk.log.Warn("unreachable", "err", err)
			wk.failing = true
		default:
			wk.log.Debug("attempt failed", "err", err)
		}
		timer.Reset(bo.next(wk.retry))
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
	}
}

// attempt reads one connection's snapshots until it fails, which it
// always does in the end. delivered reports that it brought at least one
// new snapshot.
func (w *Watcher) attempt(ctx context.Context, wk *worker) (delivered bool, err error) {
	ctx, drop := context.WithCancelCause(ctx)
	defer drop(nil)
	w.begin(wk, drop)
	defer w.end(wk)
	defer func() {
		// A dropped attempt fails with "context canceled"; say why.
		if cause := context.Cause(ctx); cause != nil {
			err = cause
		}
	}()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, wk.url, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := w.client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("status %s", resp.Status)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return false, fmt.Errorf("content type %q, want text/event-stream", resp.Header.Get("Content-Type"))
	}
	w.setConnected(wk)

	rd := newSSEReader(resp.Body, maxLine)
	for {
		ev, err := rd.next()
		if rd.retry > 0 {
			wk.retry = rd.retry // it stays for the next connections
		}
		switch {
		case errors.Is(err, io.EOF):
			return delivered, errEnded
		case err != nil:
			return delivered, fmt.Errorf("read stream: %w", err)
		case ev.typ != eventLoad:
			continue
		}
		s := new(report.Snapshot)
		if err := json.Unmarshal(ev.data, s); err != nil {
			return delivered, fmt.Errorf("decode snapshot (event id %q): %w", ev.id, err)
		}
		if w.accept(wk, s, !delivered) {
			delivered = true
		}
	}
}

// begin records the start of an attempt, which Run drops if it brings no
// new snapshot within Expiry.
func (w *Watcher) begin(wk *worker, drop context.CancelCauseFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wk.drop, wk.connDeadline = drop, time.Now().Add(w.expiry)
	w.wakeLocked(wk.connDeadline)
}

func (w *Watcher) end(wk *worker) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wk.drop, wk.connected = nil, false
}

func (w *Watcher) setConnected(wk *worker) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wk.connected = true
}

// accept makes s wk's newest snapshot if it is new evidence: not a replay
// of the newest (same Seq and At), and, after the first new snapshot of a
// connection, with a higher Seq. The first may have a lower one, or the
// same with another At: the sidecar restarted. It reports whether s was
// accepted, and logs the state changes.
func (w *Watcher) accept(wk *worker, s *report.Snapshot, first bool) bool {
	now := time.Now()
	w.mu.Lock()
	if w.workers[wk.name] != wk {
		w.mu.Unlock()
		return false // removed
	}
	prev := wk.snap
	if prev != nil && (s.Seq == prev.Seq && s.At.Equal(prev.At) || !first && s.Seq <= prev.Seq) {
		w.mu.Unlock()
		return false
	}
	before := w.statusLocked(wk, now)
	wasExpired := wk.expired
	wk.snap, wk.received, wk.expired = s, now, false
	wk.connDeadline = now.Add(w.expiry)
	if before.State != Fresh || before.Busy != s.Busy {
		w.notifyLocked()
	}
	w.wakeLocked(wk.connDeadline)
	w.mu.Unlock()

	switch {
	case first:
		wk.failing = false
		wk.log.Info("connected", "seq", s.Seq, "busy", s.Busy)
		if prev != nil && s.Seq <= prev.Seq { // not a replay, so a new publisher
			wk.log.Info("sidecar restarted", "seq", s.Seq, "last_seq", prev.Seq)
		}
	case wasExpired:
		wk.log.Info("fresh again", "seq", s.Seq, "busy", s.Busy)
	}
	return true
}

// backoff is the delay before a reconnect: exponential, with jitter.
type backoff struct {
	min, max time.Duration
	cur      time.Duration // 0 after reset
}

func (b *backoff) reset() { b.cur = 0 }

// next returns the wait before the next attempt, drawn from [d/2, d]:
// d doubles from min up to max with each call since reset, and is raised
// to retry, the sidecar's reconnection time, still within max.
func (b *backoff) next(retry time.Duration) time.Duration {
	switch {
	case b.cur == 0:
		b.cur = b.min
	case b.cur > b.max/2:
		b.cur = b.max
	default:
		b.cur *= 2
	}
	d := min(max(b.cur, retry), b.max)
	return d/2 + rand.N(d/2+1)
}
