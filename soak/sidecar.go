package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"time"
)

// sidecar is the slotgate process under test.
type sidecar struct {
	proc         *process
	proxy, admin string // base URLs
	proxyAddr    string // host:port, for gRPC
	logPath      string
	client       *http.Client // for the admin port
}

// startSidecar starts slotgate in front of e with limits n and q.
func startSidecar(bin, outDir string, e *engineSim, n, q int, client *http.Client) (*sidecar, error) {
	args := []string{
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--admin-grpc-listen", "off",
		"--engine-url", e.url(), "--engine-grpc-url", e.grpcURL(),
		"--engine-request-limit", strconv.Itoa(n), "--request-queue-limit", strconv.Itoa(q),
		// The engine sees a client's abort some time after slotgate does:
		// a broken connection, then its own scheduler step. Were the slot
		// handed on at once, the engine could run N+1 for that moment.
		// The default grace (5ms) covers an idle machine; on a loaded
		// 2-core machine with the race detector, scheduling delays alone
		// exceed it, and the soak would report a violation that is the
		// machine's, not slotgate's. 50ms covers it with room.
		"--abort-grace", "50ms",
		"--access-log=true", "--engine-metrics-interval", "20ms",
		"--retry-after", "1s", "--drain-delay", "0s", "--shutdown-timeout", "10s",
		"--log-level", "info",
	}
	logPath := filepath.Join(outDir, "slotgate.log")
	keep := func(line []byte) bool { return bytes.Contains(line, []byte(`"msg":"listening"`)) }
	p, err := startProcess("slotgate", filepath.Join(bin, "slotgate"), args, logPath, keep)
	if err != nil {
		return nil, err
	}
	line, err := p.waitLine(`"msg":"listening"`, 60*time.Second)
	if err != nil {
		p.kill()
		return nil, fmt.Errorf("%w (log %s)", err, logPath)
	}
	var l struct{ Proxy, Admin string }
	if err := json.Unmarshal([]byte(line), &l); err != nil || l.Proxy == "" || l.Admin == "" {
		p.kill()
		return nil, fmt.Errorf("soak: slotgate listening line %q: %v", line, err)
	}
	return &sidecar{proc: p, proxy: "http://" + l.Proxy, admin: "http://" + l.Admin, proxyAddr: l.Proxy,
		logPath: logPath, client: client}, nil
}

// setN changes the engine request limit through POST /limits.
func (s *sidecar) setN(ctx context.Context, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	body := fmt.Sprintf(`{"engine_request_limit":%d}`, n)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.admin+"/limits", bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("soak: POST /limits: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("soak: POST /limits %s: status %d: %s", body, resp.StatusCode, b)
	}
	return nil
}

// metrics scrapes slotgate's admin /metrics.
func (s *sidecar) metrics(ctx context.Context) (families, error) {
	return scrape(ctx, s.client, s.admin+"/metrics")
}
