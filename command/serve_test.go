package command

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/slotgate/slotgate/config"
	"github.com/slotgate/slotgate/internal/logging"
)

// errBroken is what a brokenListener's Accept returns.
var errBroken = errors.New("accept: broken listener")

// brokenListener fails every Accept with an error no server retries.
type brokenListener struct{ net.Listener }

func (brokenListener) Accept() (net.Conn, error) { return nil, errBroken }

// lockedBuffer is a buffer that the logger's goroutines may share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestServeOnEndsWhenAServerFails: when any of the three servers stops
// with an error, without a signal, serveOn logs it, stops everything else
// and returns 1 with nothing left running.
func TestServeOnEndsWhenAServerFails(t *testing.T) {
	tests := []struct {
		name string
		fail func(ls *listeners)
	}{
		{name: "proxy", fail: func(ls *listeners) { ls.proxy = brokenListener{ls.proxy} }},
		{name: "admin", fail: func(ls *listeners) { ls.admin = brokenListener{ls.admin} }},
		{name: "gRPC admin", fail: func(ls *listeners) { ls.grpc = brokenListener{ls.grpc} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			eng := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			defer func() {
				eng.Close()
				goleak.VerifyNone(t, ignore)
			}()
			var out lockedBuffer
			a := testApp(t, eng.URL, &out)
			ls, err := a.listen()
			if err != nil {
				t.Fatal(err)
			}
			tt.fail(&ls)
			done := make(chan int, 1)
			go func() { done <- a.serveOn(ls, make(chan os.Signal)) }()
			select {
			case code := <-done:
				if code != exitFailed {
					t.Errorf("serveOn returned %d, want %d", code, exitFailed)
				}
				noneRunning(t)
			case <-time.After(20 * time.Second):
				t.Fatal("serveOn did not return within 20s of a server failing")
			}
			if log := out.String(); !strings.Contains(log, `"msg":"server failed"`) || !strings.Contains(log, errBroken.Error()) {
				t.Errorf("the log does not report the failure:\n%s", log)
			}
		})
	}
}

// testApp wires slotgate in front of engineURL on loopback ports, logging
// to out, with more flags after the defaults.
func testApp(t *testing.T, engineURL string, out io.Writer, more ...string) *app {
	t.Helper()
	cfg, err := config.Load(append([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--admin-grpc-listen", "127.0.0.1:0", "--engine-url", engineURL, "--engine-metrics-dialect", "none"}, more...), nil)
	if err != nil {
		t.Fatal(err)
	}
	log, err := logging.New("slotgate", cfg.LogLevel, cfg.LogFormat, out)
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(cfg, Options{}.withDefaults(), nil, log, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	return a
}
