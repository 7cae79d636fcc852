package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/slotgate/slotgate/internal/childproc"
	"github.com/slotgate/slotgate/load/report"
)

// member is one worker of the fleet: its slotgate's two addresses.
type member struct {
	name, proxy, admin string
}

// startFleet starts each worker's enginesim and slotgate and returns once
// every slotgate is ready.
func startFleet(ctx context.Context, o options, ps *childproc.Group) ([]member, error) {
	fleet := make([]member, 0, o.workers)
	for i := range o.workers {
		m, err := startWorker(ctx, o, ps, i)
		if err != nil {
			return nil, err
		}
		fleet = append(fleet, m)
	}
	for _, m := range fleet {
		if err := childproc.WaitReady(ctx, m.admin+"/readyz", 30*time.Second); err != nil {
			return nil, err
		}
	}
	return fleet, nil
}

func startWorker(ctx context.Context, o options, ps *childproc.Group, i int) (member, error) {
	name := fmt.Sprintf("worker-%d", i)
	eng, err := ps.Start("enginesim-"+strconv.Itoa(i), filepath.Join(o.bin, "enginesim"),
		"--listen", "127.0.0.1:0", "--max-num-seqs", strconv.Itoa(o.slots),
		"--num-gpu-blocks", strconv.Itoa(o.kvBlocks), "--seed", strconv.Itoa(i),
		"--speedup-ratio", strconv.FormatFloat(o.speedup, 'f', -1, 64))
	if err != nil {
		return member{}, err
	}
	line, err := eng.Listening(ctx)
	if err != nil {
		return member{}, err
	}
	sg, err := ps.Start("slotgate-"+strconv.Itoa(i), filepath.Join(o.bin, "slotgate"),
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--admin-grpc-listen", "off",
		"--engine-url", fmt.Sprintf("http://%v", line["addr"]),
		"--engine-request-limit", strconv.Itoa(o.slots), "--engine-request-waiting-limit", strconv.Itoa(o.waiting),
		"--request-queue-limit", strconv.Itoa(o.queue),
		"--active-decode-blocks-threshold", strconv.FormatFloat(o.decodeThreshold, 'f', -1, 64),
		"--active-prefill-tokens-threshold", strconv.Itoa(o.prefillThreshold),
		"--drain-delay", "0s")
	if err != nil {
		return member{}, err
	}
	line, err = sg.Listening(ctx)
	if err != nil {
		return member{}, err
	}
	return member{name: name, proxy: fmt.Sprintf("http://%v", line["proxy"]), admin: fmt.Sprintf("http://%v", line["admin"])}, nil
}

// waitDrained waits until no worker has a request in flight or queued and
// none is busy: the second burst starts from an idle fleet, as the first.
func waitDrained(ctx context.Context, fleet []member) error {
	for _, m := range fleet {
		err := poll(ctx, 30*time.Second, m.name+" to drain", func() (bool, error) {
			var s report.Snapshot
			if _, err := getJSON(ctx, m.admin+report.PathLoad, &s); err != nil {
				return false, nil // not fatal: the next poll may answer
			}
			return s.Requests.InFlight == 0 && s.Requests.Queued == 0 && !s.Busy, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// poll calls done every 50 ms until it reports true, ctx ends or limit
// passes; what names what it waited for, in the error.
func poll(ctx context.Context, limit time.Duration, what string, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// getJSON GETs url and decodes its JSON answer into v (when not nil); it
// returns the status.
func getJSON(ctx context.Context, url string, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			return resp.StatusCode, fmt.Errorf("GET %s: decode: %w", url, err)
		}
	}
	return resp.StatusCode, nil
}
