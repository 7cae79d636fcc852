package childproc

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// readyPoll is how often WaitReady asks.
const readyPoll = 50 * time.Millisecond

// WaitReady asks url with GET until it answers 200 (a child's readiness
// endpoint, slotgate's /readyz), every 50 ms for at most within; it fails
// when within passes first, or when ctx ends.
func WaitReady(ctx context.Context, url string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		if ready(ctx, url) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready within %s (%s): %w", within, url, ctx.Err())
		case <-tick.C:
		}
	}
}

// ready reports whether url answers 200 now.
func ready(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
