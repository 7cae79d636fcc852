package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// The one client used for every target: closed-loop workers on keep-alive
// connections, each sending a small JSON POST and reading the answer to
// its end.

var reqBody = []byte(`{"model":"m","prompt":"hi","max_tokens":16}`)

// loadResult is one closed-loop run.
type loadResult struct {
	elapsed  time.Duration
	ok       []time.Duration // latencies of 200 answers
	rejected []time.Duration // latencies of overload answers (isRejection)
	other    int             // other statuses and transport errors
	firstErr error
}

func newTransport(conns int) *http.Transport {
	return &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
}

// closedLoop runs conc workers against url for d and returns their
// latencies. The run is bounded by d plus the request timeout.
func closedLoop(ctx context.Context, url string, conc int, d time.Duration) loadResult {
	tr := newTransport(conc)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var res loadResult
	res.elapsed = runClosedLoop(ctx, conc, d, func() func() {
		t0 := time.Now()
		status, err := post(ctx, client, url)
		lat := time.Since(t0)
		return func() {
			switch {
			case err != nil:
				res.other++
				res.firstErr = cmpOr(res.firstErr, err)
			case status == http.StatusOK:
				res.ok = append(res.ok, lat)
			case isRejection(status):
				res.rejected = append(res.rejected, lat)
			default:
				res.other++
				res.firstErr = cmpOr(res.firstErr, errors.New("status "+http.StatusText(status)))
			}
		}
	})
	slices.Sort(res.ok)
	slices.Sort(res.rejected)
	return res
}

// runClosedLoop runs conc workers that each call one back to back until d
// has passed, and returns the time measured. one makes a request and
// returns what records its result; runClosedLoop calls that, one at a
// time, only for a request that ended within d and while ctx lives.
//
// Workers stop sending at the deadline, but the requests then in flight
// end on their own, uncounted: cancelling them would abort requests the
// engine is serving and let queued ones in behind them before the engine
// has seen the aborts, which it would count as more than N at once.
func runClosedLoop(ctx context.Context, conc int, d time.Duration, one func() (record func())) time.Duration {
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	start := time.Now()
	stop := start.Add(d)
	for range conc {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(stop) {
				record := one()
				if ctx.Err() != nil || time.Now().After(stop) {
					continue
				}
				mu.Lock()
				record()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return min(time.Since(start), d) // what was counted ended within d
}

// isRejection says whether status is an overload answer: the 529 of
// slotgate and the peers set up to answer it, or the 503 HAProxy answers
// when `timeout queue` ends a wait (haproxy-maxqueue).
func isRejection(status int) bool {
	return status == 529 || status == http.StatusServiceUnavailable
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// post sends one request and reads the answer to its end.
func post(ctx context.Context, c *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(reqBody))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}
