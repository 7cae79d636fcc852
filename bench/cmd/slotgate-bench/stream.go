package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// streamResult is one closed-loop run of SSE streams.
type streamResult struct {
	elapsed  time.Duration
	streams  int             // complete streams
	ttft     []time.Duration // request sent to first chunk read, per stream
	itl      []time.Duration // gaps between chunks read, every stream's
	other    int             // bad statuses, short streams, transport errors
	firstErr error
}

// streamLoop runs conc workers that each read one SSE stream after the
// other from url for d.
func streamLoop(ctx context.Context, url string, conc int, d time.Duration) streamResult {
	tr := newTransport(conc)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var res streamResult
	res.elapsed = runClosedLoop(ctx, conc, d, func() func() {
		ttft, gaps, err := readStream(ctx, client, url)
		return func() {
			if err != nil {
				res.other++
				res.firstErr = cmpOr(res.firstErr, err)
				return
			}
			res.streams++
			res.ttft = append(res.ttft, ttft)
			res.itl = append(res.itl, gaps...)
		}
	})
	slices.Sort(res.ttft)
	slices.Sort(res.itl)
	return res
}

// readStream sends one request and reads its SSE answer, noting when each
// of the engine's data chunks arrives (the closing "data: [DONE]" is not a
// token and is not timed). It fails unless all sseChunks arrive.
func readStream(ctx context.Context, c *http.Client, url string) (time.Duration, []time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(reqBody))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	t0 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	var at []time.Time
	for {
		line, err := br.ReadSlice('\n')
		if bytes.HasPrefix(line, []byte("data: {")) {
			at = append(at, time.Now())
		}
		if err != nil {
			break // EOF at the end of the stream, or a cut one
		}
	}
	if len(at) != sseChunks {
		return 0, nil, fmt.Errorf("stream of %d chunks, want %d", len(at), sseChunks)
	}
	gaps := make([]time.Duration, len(at)-1)
	for i := range gaps {
		gaps[i] = at[i+1].Sub(at[i])
	}
	return at[0].Sub(t0), gaps, nil
}

// streaming is the stream scenario's measurement: SSE of 16 chunks 10 ms
// apart at concurrency 32, time to first token and inter-token latency.
func streaming(ctx context.Context, t trial) (map[string]float64, error) {
	r := streamLoop(ctx, t.url+"/sse", 32, t.d)
	if r.streams == 0 {
		return nil, fmt.Errorf("no stream complete (%d errors, first: %v)", r.other, r.firstErr)
	}
	return map[string]float64{
		"streams/s":   float64(r.streams) / r.elapsed.Seconds(),
		"TTFT p50 ms": ms(percentile(r.ttft, 50)),
		"TTFT p99 ms": ms(percentile(r.ttft, 99)),
		"ITL p50 ms":  ms(percentile(r.itl, 50)),
		"ITL p99 ms":  ms(percentile(r.itl, 99)),
		"errors":      float64(r.other),
	}, nil
}
