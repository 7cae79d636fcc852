package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotgate/slotgate/admission"
	"github.com/slotgate/slotgate/command"
)

func TestProviderValidates(t *testing.T) {
	for raw, wantErr := range map[string]string{
		`{"max_wait_ms":2000}`:        "",
		`{"max_wait_ms":0}`:           "between 1 and 60000",
		`{"max_wait_ms":60001}`:       "between 1 and 60000",
		`{"max_wait_ms":5,"extra":1}`: `unknown field "extra"`,
		`{"max_wait_ms":"2000"}`:      "cannot unmarshal",
	} {
		_, err := provider(admission.NewParameters([]byte(raw)))
		if (wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), wantErr)) {
			t.Errorf("provider(%s) = %v, want %q", raw, err, wantErr)
		}
	}
}

func TestQueueBudget(t *testing.T) {
	now := time.Unix(1000, 0)
	q := &queueBudget{budget: 2 * time.Second, now: func() time.Time { return now }}
	fresh := admission.NewRequest(admission.Inputs{Ingress: now.Add(-time.Second)})
	if err := q.Classify(context.Background(), fresh); err != nil || !fresh.DueAt().Equal(now.Add(time.Second)) {
		t.Errorf("a request with budget left: %v, due %v", err, fresh.DueAt())
	}
	spent := admission.NewRequest(admission.Inputs{Ingress: now.Add(-2 * time.Second)})
	err := q.Classify(context.Background(), spent)
	if rej := admission.AsRejection(err); err == nil || rej.Kind != admission.CapacityExhausted {
		t.Errorf("a spent budget: %v, want CapacityExhausted", err)
	}
}

// TestRunsWithItsPolicy starts the custom build's slotgate with the
// example policy file, checks that it starts, and stops it with a signal:
// the registration reaches the configuration loader.
func TestRunsWithItsPolicy(t *testing.T) {
	reg, err := registry()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	signals := make(chan os.Signal, 1)
	args := []string{"--engine-request-limit", "2", "--admission-config", "admission.yaml", "--listen", "127.0.0.1:0",
		"--admin-listen", "127.0.0.1:0", "--admin-grpc-listen", "off", "--drain-delay", "0s", "--engine-url", "http://127.0.0.1:1"}
	code := make(chan int, 1)
	go func() {
		code <- command.Run(command.Options{Registry: reg}, args, map[string]string{}, &bytes.Buffer{}, &stderr, signals)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), `"msg":"listening"`) {
		select {
		case c := <-code:
			t.Fatalf("exited %d before listening:\n%s", c, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not listening after 30 s:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	signals <- os.Interrupt
	if c := <-code; c != 0 {
		t.Errorf("exit status %d, want 0:\n%s", c, stderr.String())
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
