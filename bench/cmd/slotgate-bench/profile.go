package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// Token counting's share of slotgate's CPU (issue 17). slotgate counts
// the tokens of every admitted request (gate.Exchange.Counting holds for
// every request with a slot; no flag turns it off, and
// --engine-metrics-dialect none, which the bench already passes, does
// not), so "counting off" cannot be run. Instead slotgate's CPU is
// profiled while the streams run (it serves pprof with
// --enable-profiling), and `go tool pprof -top -focus` gives the share of
// the samples whose stack passes through the counters: the prompt
// estimator (estimate.PromptCounter) and the SSE parser
// (estimate.StreamCounter, and tokenBody.update, which passes its counts
// on). Not the readers that wrap them (PromptReader.Read, tokenBody.Read):
// those read the socket too, and their stacks hold its system calls.

// profileFocus maps each profile metric to the focus expression whose
// share it is.
var profileFocus = map[string]string{
	"counting CPU %": `estimate\.\(\*PromptCounter\)|estimate\.\(\*StreamCounter\)|proxy\.\(\*tokenBody\)\.update`,
	"prompt CPU %":   `estimate\.\(\*PromptCounter\)`,
	"SSE CPU %":      `estimate\.\(\*StreamCounter\)|proxy\.\(\*tokenBody\)\.update`,
}

var profileMetrics = []string{"counting CPU %", "prompt CPU %", "SSE CPU %"}

// profileRun is a CPU profile being taken from a slotgate's admin port.
type profileRun struct {
	done chan struct{}
	path string
	err  error
}

// startProfile asks slotgate at admin for a CPU profile of about d (whole
// seconds, at least 1), saved under dir; shares waits for it.
func startProfile(ctx context.Context, admin string, d time.Duration, dir string) *profileRun {
	p := &profileRun{done: make(chan struct{}), path: filepath.Join(dir, fmt.Sprintf("slotgate-cpu-%d.pb.gz", time.Now().UnixNano()))}
	secs := max(1, int(d/time.Second))
	go func() {
		defer close(p.done)
		p.err = fetchProfile(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", admin, secs), p.path, d+10*time.Second)
	}()
	return p
}

func fetchProfile(ctx context.Context, url, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d (slotgate started without --enable-profiling?)", url, resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return f.Close()
}

// shares waits for the profile and returns each profile metric, in
// percent of slotgate's CPU samples.
func (p *profileRun) shares() (map[string]float64, error) {
	<-p.done
	if p.err != nil {
		return nil, p.err
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("reading the profile needs the go command (go tool pprof): %w", err)
	}
	out := map[string]float64{}
	for name, focus := range profileFocus {
		b, err := exec.Command(goTool, "tool", "pprof", "-top", "-nodefraction=0", "-focus="+focus, p.path).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("go tool pprof %s: %w: %s", p.path, err, b)
		}
		v, err := parseFocusShare(string(b))
		if err != nil {
			return nil, fmt.Errorf("go tool pprof %s: %w", p.path, err)
		}
		out[name] = v
	}
	return out, nil
}

var focusShare = regexp.MustCompile(`(?m)^Showing nodes accounting for [^,\n]*, ([0-9]+(?:\.[0-9]+)?)% of `)

// parseFocusShare reads the share of all samples that a focused
// `go tool pprof -top` accounts for, in percent, from its header line
// "Showing nodes accounting for 0.28s, 23.33% of 1.20s total".
func parseFocusShare(out string) (float64, error) {
	m := focusShare.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no \"Showing nodes accounting for\" line in pprof's output")
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || v > 100 {
		return 0, fmt.Errorf("share %q: want a percentage", m[1])
	}
	return v, nil
}
