package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
)

// started is run in a goroutine of the test, fed signals by the test.
type started struct {
	addr    string
	grpc    string // the grpc_addr of the listening line; "" without --grpc-listen
	log     *logBuffer
	signals chan os.Signal
	code    chan int
}

func startRun(t *testing.T, args []string, env map[string]string) *started {
	t.Helper()
	s := &started{log: &logBuffer{}, signals: make(chan os.Signal, 2), code: make(chan int, 1)}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		s.code <- run(args, env, io.Discard, s.log, s.signals)
	}()
	l := listening(t, s.log, exited)
	s.addr, s.grpc = l.Addr, l.GRPCAddr
	t.Cleanup(func() { // a test that failed early still stops run
		select {
		case s.signals <- syscall.SIGTERM:
		default:
		}
		<-exited
	})
	return s
}

// A signal lets a request in flight finish, then run returns 0.
func TestRunShutsDownGracefully(t *testing.T) {
	s := startRun(t, []string{"--listen", "127.0.0.1:0", "--metrics-dialect", "sglang"},
		map[string]string{"ENGINESIM_MODEL": "env-model"})
	c := client(t)
	resp, err := c.Get("http://" + s.addr + "/v1/loads")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/loads: %v %v", resp, err)
	}
	resp.Body.Close()
	// Speedup 1: 30 tokens take about 0.2 s, so the signal comes mid-stream.
	r := stream(t, c, s.addr, `{"model":"env-model","prompt":"hi","max_tokens":30,"ignore_eos":true,"stream":true}`)
	first, _ := events(r.Body, 1)
	if len(first) != 1 {
		t.Fatal("no first event")
	}
	s.signals <- syscall.SIGTERM
	rest, done := events(r.Body, 0)
	if !done || len(rest) != 29 {
		t.Fatalf("after SIGTERM the stream got %d more events, [DONE] %v; want 29 and [DONE]", len(rest), done)
	}
	if code := <-s.code; code != exitOK {
		t.Fatalf("exit status %d, want 0\n%s", code, s.log)
	}
	if _, err := net.Dial("tcp", s.addr); err == nil {
		t.Error("still accepting connections after shutdown")
	}
	if !strings.Contains(s.log.String(), `"msg":"stopped"`) {
		t.Errorf("no stopped line:\n%s", s.log)
	}
}

// A second signal closes connections at once and exits 1.
func TestRunSecondSignal(t *testing.T) {
	s := startRun(t, []string{"--listen", "127.0.0.1:0"}, nil)
	c := client(t)
	r := stream(t, c, s.addr, `{"prompt":"hi","max_tokens":4000,"ignore_eos":true,"stream":true}`)
	if first, _ := events(r.Body, 1); len(first) != 1 {
		t.Fatal("no first event")
	}
	s.signals <- syscall.SIGTERM
	s.signals <- syscall.SIGINT
	if code := <-s.code; code != exitFailed {
		t.Fatalf("exit status %d, want 1\n%s", code, s.log)
	}
	if _, done := events(r.Body, 0); done {
		t.Error("the cut stream still ended with [DONE]")
	}
}

func TestRunRefusesBadConfiguration(t *testing.T) {
	var stderr logBuffer
	code := run([]string{"--max-num-seqs", "0", "--metrics-dialect", "xml"}, map[string]string{"ENGINESIM_BLOCK_SIZE": "x"},
		io.Discard, &stderr, nil)
	want := `enginesim: --max-num-seqs: must be an integer from 1 through 2147483647, got "0"
enginesim: ENGINESIM_BLOCK_SIZE: must be an integer from 1 through 65536, got "x"
enginesim: --metrics-dialect: must be one of vllm, sglang, trtllm, got "xml"
`
	if code != exitConfig || stderr.String() != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and:\n%s", code, stderr.String(), want)
	}
}

func TestRunHelp(t *testing.T) {
	var stdout, stderr logBuffer
	if code := run([]string{"--help"}, nil, &stdout, &stderr, nil); code != exitOK {
		t.Fatalf("--help exit %d", code)
	}
	if !strings.Contains(stdout.String(), "ENGINESIM_SPEEDUP_RATIO") || stderr.String() != "" {
		t.Fatalf("--help wrote stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}

// A taken port, HTTP or gRPC, stops start-up with status 1.
func TestRunListenFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tests := []struct {
		name string
		args []string
	}{
		{"HTTP", []string{"--listen", ln.Addr().String()}},
		{"gRPC", []string{"--listen", "127.0.0.1:0", "--grpc-listen", ln.Addr().String()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr logBuffer
			if code := run(tt.args, nil, io.Discard, &stderr, nil); code != exitFailed {
				t.Fatalf("listening on a taken port: exit %d, want 1\n%s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), "start-up failed") || strings.Contains(stderr.String(), `"msg":"listening"`) {
				t.Errorf("log:\n%s", stderr.String())
			}
		})
	}
}
