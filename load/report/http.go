package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Paths of the load endpoints on the admin port.
const (
	// PathLoad answers the latest snapshot as JSON.
	PathLoad = "/v1/load"
	// PathStream streams snapshots as Server-Sent Events: one event named
	// "load" per snapshot, its id the snapshot's Seq, its data the JSON
	// form. A heartbeat arrives at least once a second.
	PathStream = "/v1/load/stream"
)

// writeTimeout bounds the write of one event to a watcher.
const writeTimeout = 10 * time.Second

// errWatcherGone ends a stream whose client stopped reading.
var errWatcherGone = errors.New("watcher gone")

// NewHandler returns the handler of GET PathLoad and GET PathStream.
func NewHandler(h *Hub) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathLoad, func(w http.ResponseWriter, _ *http.Request) {
		body, err := json.Marshal(h.Latest())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(append(body, '\n'))
	})
	mux.HandleFunc("GET "+PathStream, func(w http.ResponseWriter, r *http.Request) {
		stream(r.Context(), w, h)
	})
	return mux
}

// stream writes snapshots to w as Server-Sent Events until the client
// leaves or a write fails.
func stream(ctx context.Context, w http.ResponseWriter, h *Hub) {
	rc := http.NewResponseController(w)
	// The admin server's read timeout would end the stream: a read
	// deadline that passes while the handler runs cancels its context.
	_ = rc.SetReadDeadline(time.Time{})
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Accel-Buffering", "no") // no buffering in a proxy on the way
	w.WriteHeader(http.StatusOK)
	_ = h.Watch(ctx, func(s *Snapshot) error {
		data, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("encode snapshot: %w", err)
		}
		// A watcher that stops reading must not hold its goroutine forever.
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := fmt.Fprintf(w, "event: load\nid: %d\ndata: %s\n\n", s.Seq, data); err != nil {
			return errors.Join(errWatcherGone, err)
		}
		if err := rc.Flush(); err != nil {
			return errors.Join(errWatcherGone, err)
		}
		return nil
	})
}
