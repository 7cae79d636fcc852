package childproc

import (
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestMainCode(t *testing.T) {
	parseOK := func([]string, io.Writer) (int, error) { return 7, nil }
	for _, tc := range []struct {
		name    string
		parse   func([]string, io.Writer) (int, error)
		runErr  error
		code    int
		stderr  string
		wantRun bool
	}{
		{name: "help", parse: func([]string, io.Writer) (int, error) { return 0, flag.ErrHelp }, code: 0},
		{name: "bad flag", parse: func([]string, io.Writer) (int, error) { return 0, errors.New("--rate: must be above 0") },
			code: 2, stderr: "demo: --rate: must be above 0\n"},
		{name: "run fails", parse: parseOK, runErr: errors.New("engine gone"), code: 1, stderr: "demo: engine gone\n", wantRun: true},
		{name: "run ends well", parse: parseOK, code: 0, wantRun: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr strings.Builder
			ran := false
			code := mainCode("demo", nil, &stderr, tc.parse, func(ctx context.Context, o int) error {
				ran = o == 7 && ctx.Err() == nil
				return tc.runErr
			})
			if code != tc.code || stderr.String() != tc.stderr || ran != tc.wantRun {
				t.Errorf("code %d, stderr %q, ran %v; want %d, %q, %v", code, stderr.String(), ran, tc.code, tc.stderr, tc.wantRun)
			}
		})
	}
}

func TestWaitReady(t *testing.T) {
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if asked.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	if err := WaitReady(context.Background(), srv.URL, 10*time.Second); err != nil || asked.Load() != 3 {
		t.Errorf("WaitReady = %v after %d asks, want nil after 3", err, asked.Load())
	}
	never := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer never.Close()
	if err := WaitReady(context.Background(), never.URL, 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), never.URL) {
		t.Errorf("WaitReady on a server never ready = %v, want an error naming its URL", err)
	}
}
