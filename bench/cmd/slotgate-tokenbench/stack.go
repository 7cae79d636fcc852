package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slotgate/slotgate/internal/childproc"
)

// stopGrace is how long a child has to end after SIGTERM before it is
// killed.
const stopGrace = 5 * time.Second

// engineSpec is enginesim's shape, the same for every configuration.
type engineSpec struct {
	MaxNumSeqs          int     `json:"max_num_seqs"`
	MaxNumBatchedTokens int     `json:"max_num_batched_tokens"`
	MaxModelLen         int     `json:"max_model_len"`
	Speedup             float64 `json:"speedup_ratio"`
}

func (e engineSpec) args() []string {
	return []string{"--listen", "127.0.0.1:0", "--max-num-seqs", strconv.Itoa(e.MaxNumSeqs),
		"--max-num-batched-tokens", strconv.Itoa(e.MaxNumBatchedTokens),
		"--max-model-len", strconv.Itoa(e.MaxModelLen),
		"--speedup-ratio", strconv.FormatFloat(e.Speedup, 'f', -1, 64)}
}

// pair is a running enginesim and the slotgate in front of it.
type pair struct {
	engine, proxy, admin string
}

// startPair starts enginesim, then slotgate in front of it with
// slotgateArgs, in group, and waits until slotgate is ready.
func startPair(ctx context.Context, group *childproc.Group, bin string, eng engineSpec, slotgateArgs []string) (pair, error) {
	e, err := group.Start("enginesim", filepath.Join(bin, "enginesim"), eng.args()...)
	if err != nil {
		return pair{}, err
	}
	l, err := e.Listening(ctx)
	if err != nil {
		return pair{}, err
	}
	p := pair{engine: fmt.Sprintf("http://%v", l["addr"])}
	args := append([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--admin-grpc-listen", "127.0.0.1:0", "--engine-url", p.engine, "--drain-delay", "0s",
		"--access-log=false"}, slotgateArgs...)
	sg, err := group.Start("slotgate", filepath.Join(bin, "slotgate"), args...)
	if err != nil {
		return pair{}, err
	}
	if l, err = sg.Listening(ctx); err != nil {
		return pair{}, err
	}
	p.proxy, p.admin = fmt.Sprintf("http://%v", l["proxy"]), fmt.Sprintf("http://%v", l["admin"])
	return p, childproc.WaitReady(ctx, p.admin+"/readyz", 30*time.Second)
}

// scrapeValue reads one unlabelled sample from the Prometheus text at url.
func scrapeValue(ctx context.Context, url, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("scrape %s: %s: %w", url, name, err)
			}
			return f, nil
		}
	}
	return 0, fmt.Errorf("scrape %s: no %s", url, name)
}

// buildBinaries builds slotgate and enginesim into dir with the go
// command, from the slotgate module that holds the working directory.
func buildBinaries(ctx context.Context, dir string) error {
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if err != nil || strings.TrimSpace(string(gomod)) == "" || strings.TrimSpace(string(gomod)) == os.DevNull {
		return fmt.Errorf("find slotgate's module with go env GOMOD (run from slotgate's tree, or pass --bin): %w", errors.Join(err, errNoModule))
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator), "./cmd/slotgate", "./cmd/enginesim")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/slotgate ./cmd/enginesim in %s (or pass --bin): %w\n%s", root, err, out)
	}
	return nil
}

var errNoModule = errors.New("not inside a Go module")
