package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strconv"
	"time"
)

// Faults is enginesim's fault injection, as PUT /enginesim/faults takes
// it: a probability per request for each fault, and the durations of the
// stall and of the slow first token.
type Faults struct {
	ResetRate          float64 `json:"reset_rate"`
	ErrorRate          float64 `json:"error_rate"`
	StallRate          float64 `json:"stall_rate"`
	Stall              string  `json:"stall"`
	SlowFirstTokenRate float64 `json:"slow_first_token_rate"`
	SlowFirstToken     string  `json:"slow_first_token"`
	NeverEndRate       float64 `json:"never_end_rate"`
}

// noFaults injects nothing.
var noFaults = Faults{Stall: "0s", SlowFirstToken: "0s"}

// randomFaults draws a fault mix: one time in five none at all, else
// each fault at a few percent at most. Never-ending answers are rarer:
// each holds a slot until its client's deadline.
func randomFaults(rng *rand.Rand) Faults {
	if rng.IntN(5) == 0 {
		return noFaults
	}
	ms := func(lo, hi int) string { return strconv.Itoa(lo+rng.IntN(hi-lo+1)) + "ms" }
	return Faults{
		ResetRate:          rng.Float64() * 0.03,
		ErrorRate:          rng.Float64() * 0.03,
		StallRate:          rng.Float64() * 0.03,
		Stall:              ms(50, 800),
		SlowFirstTokenRate: rng.Float64() * 0.08,
		SlowFirstToken:     ms(20, 400),
		NeverEndRate:       rng.Float64() * 0.002,
	}
}

// flags are f as enginesim's command-line flags.
func (f Faults) flags() []string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return []string{
		"--fault-reset-rate", g(f.ResetRate), "--fault-error-rate", g(f.ErrorRate),
		"--fault-stall-rate", g(f.StallRate), "--fault-stall", f.Stall,
		"--fault-slow-first-token-rate", g(f.SlowFirstTokenRate), "--fault-slow-first-token", f.SlowFirstToken,
		"--fault-never-end-rate", g(f.NeverEndRate),
	}
}

// finalStats is enginesim's "final stats" line, logged as it stops.
type finalStats struct {
	InFlightMax         int                `json:"in_flight_max"`
	BeforeFirstTokenMax int                `json:"before_first_token_max"`
	FaultsInjected      map[string]float64 `json:"faults_injected"`
}

// engineSim is the enginesim process, restarted on the ports of its first
// start.
type engineSim struct {
	bin, outDir string
	args        []string // flags after the addresses
	client      *http.Client

	// The addresses of the first start, then read-only: the pollers
	// read them while the chaos goroutine restarts the process.
	httpAddr, grpcAddr string
	proc               *process // the chaos goroutine's, then finish's
	starts             int
}

// start starts enginesim: on free ports the first time, on the same ports
// after.
func (e *engineSim) start() error {
	e.starts++
	httpAddr, grpcAddr := e.httpAddr, e.grpcAddr
	if httpAddr == "" {
		httpAddr, grpcAddr = "127.0.0.1:0", "127.0.0.1:0"
	}
	args := append([]string{"--listen", httpAddr, "--grpc-listen", grpcAddr, "--log-level", "info"}, e.args...)
	logPath := filepath.Join(e.outDir, fmt.Sprintf("enginesim-%d.log", e.starts))
	keep := func(line []byte) bool {
		return bytes.Contains(line, []byte(`"msg":"listening"`)) || bytes.Contains(line, []byte(`"msg":"final stats"`))
	}
	var err error
	// The old process's ports may take a moment to come free.
	for try := 0; try < 20; try++ {
		var p *process
		if p, err = startProcess("enginesim", filepath.Join(e.bin, "enginesim"), args, logPath, keep); err != nil {
			return err
		}
		var line string
		if line, err = p.waitLine(`"msg":"listening"`, 30*time.Second); err == nil {
			var l struct {
				Addr     string `json:"addr"`
				GRPCAddr string `json:"grpc_addr"`
			}
			if err = json.Unmarshal([]byte(line), &l); err != nil || l.Addr == "" || l.GRPCAddr == "" {
				p.kill()
				return fmt.Errorf("soak: enginesim listening line %q: %v", line, err)
			}
			if e.httpAddr == "" {
				// Written once, before the pollers start: they read the
				// addresses while a restart runs.
				e.httpAddr, e.grpcAddr = l.Addr, l.GRPCAddr
			} else if l.Addr != e.httpAddr || l.GRPCAddr != e.grpcAddr {
				p.kill()
				return fmt.Errorf("soak: enginesim restarted on %s and %s, not %s and %s", l.Addr, l.GRPCAddr, e.httpAddr, e.grpcAddr)
			}
			e.proc = p
			return nil
		}
		p.kill()
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("%w (log %s)", err, logPath)
}

// stop ends enginesim as SIGTERM does and returns its final stats.
func (e *engineSim) stop() (finalStats, error) {
	var fs finalStats
	stopErr := e.proc.stop(2 * time.Second)
	line, err := e.proc.waitLine(`"msg":"final stats"`, time.Second)
	if err != nil {
		return fs, fmt.Errorf("soak: enginesim's final stats: %w (stop: %v)", err, stopErr)
	}
	if err := json.Unmarshal([]byte(line), &fs); err != nil {
		return fs, fmt.Errorf("soak: enginesim's final stats %q: %w", line, err)
	}
	return fs, nil
}

func (e *engineSim) url() string     { return "http://" + e.httpAddr }
func (e *engineSim) grpcURL() string { return "http://" + e.grpcAddr }

// setFaults changes the faults at run time.
func (e *engineSim) setFaults(ctx context.Context, f Faults) error {
	body, err := json.Marshal(f)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, e.url()+"/enginesim/faults", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("soak: PUT /enginesim/faults: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("soak: PUT /enginesim/faults %s: status %d: %s", body, resp.StatusCode, b)
	}
	return nil
}

// metrics scrapes enginesim's own series.
func (e *engineSim) metrics(ctx context.Context) (families, error) {
	return scrape(ctx, e.client, e.url()+"/enginesim/metrics")
}
