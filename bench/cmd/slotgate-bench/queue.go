package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotgate/slotgate/load/report"
)

// Queue depth, read from each proxy the way its operator would: slotgate's
// load snapshot on the admin port (the queue dynamo_request_queue shows),
// HAProxy's `show stat` on its stats socket. nginx OSS has no queue to
// read.

// slotgateQueue reads the queue length from slotgate's load snapshot,
// GET /v1/load on the admin port: a few hundred bytes from memory, where
// /metrics, 14 KB gathered afresh, 200 times a second, took enough of
// slotgate's CPU to lower its own figures in the storm.
func slotgateQueue(admin string) func(context.Context) (int, error) {
	c := &http.Client{Timeout: time.Second}
	url := "http://" + admin + "/v1/load"
	return func(ctx context.Context) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var snap report.Snapshot
		if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil {
			return 0, fmt.Errorf("slotgate's /v1/load: %w", err)
		}
		return snap.Requests.Queued, nil
	}
}

// haproxyQueue reads the backend "be" queue from HAProxy's stats socket.
func haproxyQueue(sock string) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", sock)
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(time.Second)) //nolint:errcheck // a late answer fails the read
		// "be 6 -1": only backend be's BACKEND (2) and server (4) rows.
		if _, err := io.WriteString(conn, "show stat be 6 -1\n"); err != nil {
			return 0, err
		}
		return haproxyQueued(bufio.NewReader(conn), "be")
	}
}

// haproxyQueued sums the qcur column of backend's rows in the CSV of
// HAProxy's `show stat`: the BACKEND row counts the requests waiting for
// any server, each server row those waiting for that server, so together
// they are everything queued in the backend.
func haproxyQueued(r io.Reader, backend string) (int, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return 0, fmt.Errorf("show stat: %w", err)
	}
	if len(head) > 0 {
		head[0] = strings.TrimPrefix(head[0], "# ")
	}
	px, sv, qc := slices.Index(head, "pxname"), slices.Index(head, "svname"), slices.Index(head, "qcur")
	if px < 0 || sv < 0 || qc < 0 {
		return 0, fmt.Errorf("show stat: no pxname, svname or qcur column in %q", head)
	}
	total, rows := 0, 0
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("show stat: %w", err)
		}
		if len(rec) <= max(px, sv, qc) || rec[px] != backend || rec[sv] == "FRONTEND" {
			continue
		}
		rows++
		if rec[qc] == "" {
			continue
		}
		n, err := strconv.Atoi(rec[qc])
		if err != nil {
			return 0, fmt.Errorf("show stat: qcur %q: %w", rec[qc], err)
		}
		total += n
	}
	if rows == 0 {
		return 0, fmt.Errorf("show stat: no row for backend %q", backend)
	}
	return total, nil
}

// sampleMax calls read every interval until ctx ends and returns the
// largest value it read. Failed reads are skipped (a proxy under a storm
// may be slow to answer one); if none succeeded, the first error is
// returned.
func sampleMax(ctx context.Context, every time.Duration, read func(context.Context) (int, error)) (int, error) {
	t := time.NewTicker(every)
	defer t.Stop()
	best, ok := 0, false
	var firstErr error
	for {
		v, err := read(ctx)
		switch {
		case err == nil:
			best, ok = max(best, v), true
		case ctx.Err() == nil && firstErr == nil:
			firstErr = err
		}
		select {
		case <-ctx.Done():
			if !ok && firstErr != nil {
				return 0, firstErr
			}
			return best, nil
		case <-t.C:
		}
	}
}

// queueSampler samples a target's queue depth every 5 ms in a goroutine
// of its own, from sampleQueue to stop, which ends it.
type queueSampler struct {
	cancel context.CancelFunc
	done   chan struct{}
	max    int
	err    error
}

// sampleQueue starts sampling inst's queue; a target with no queue to read
// (direct, nginx) reads as 0.
func sampleQueue(ctx context.Context, inst *instance) *queueSampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &queueSampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if inst.queued != nil {
			s.max, s.err = sampleMax(ctx, 5*time.Millisecond, inst.queued)
		}
	}()
	return s
}

// stop ends the sampling and returns the largest depth read; called
// again, it returns the same.
func (s *queueSampler) stop() (int, error) {
	s.cancel()
	<-s.done
	if s.err != nil {
		return 0, fmt.Errorf("queue depth: %w", s.err)
	}
	return s.max, nil
}

// stormMeter measures, around an overload storm's client (the driver's
// or wrk), what both storms report: the proxy's queue depth, sampled, the
// proxy's CPU, the machine's, and the engine's most in flight.
type stormMeter struct {
	t      trial
	queued *queueSampler
	before cpuTicks
	cpu    *cpuMeter
}

// stormMeasured is what a stormMeter measured.
type stormMeasured struct {
	metrics       map[string]float64 // queued max, engine max, proxy CPU µs/req, machine busy %
	before, after cpuTicks
}

// startStorm starts measuring t's target; stop must follow.
func startStorm(ctx context.Context, t trial) (*stormMeter, error) {
	m := &stormMeter{t: t, queued: sampleQueue(ctx, t.inst)}
	var err error
	if m.before, err = readCPUTicks(); err != nil {
		_, _ = m.queued.stop()
		return nil, err
	}
	m.cpu = startCPU(t.inst.pid)
	return m, nil
}

// stop ends the measure; answers is how many answers the client read.
func (m *stormMeter) stop(ctx context.Context, answers int) (stormMeasured, error) {
	perReq, cpuErr := m.cpu.perRequest(answers)
	after, tickErr := readCPUTicks()
	qmax, qerr := m.queued.stop()
	if err := cmpOr(cmpOr(qerr, cpuErr), tickErr); err != nil {
		return stormMeasured{}, err
	}
	st, err := m.t.eng.stats(ctx)
	if err != nil {
		return stormMeasured{}, err
	}
	return stormMeasured{before: m.before, after: after, metrics: map[string]float64{
		"engine max":       float64(st.MaxInFlight),
		"queued max":       float64(qmax),
		"proxy CPU µs/req": perReq,
		machineBusyMetric:  100 * machineBusy(m.before, after),
	}}, nil
}
