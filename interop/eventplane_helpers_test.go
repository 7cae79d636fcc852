package interop_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/vmihailenco/msgpack/v5"
)

// runNATS starts an in-process NATS server on 127.0.0.1, at port (-1 for
// a random one).
func runNATS(t *testing.T, port int) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatalf("nats server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready within 10s")
	}
	t.Cleanup(s.Shutdown)
	return s
}

func natsPort(s *server.Server) int { return s.Addr().(*net.TCPAddr).Port }

// received is one message as Dynamo's frontend would decode it, with
// vmihailenco/msgpack standing in for rmp_serde.
type received struct {
	raw     []byte
	subject string
	env     envelope
	load    activeLoad
	at      time.Time
}

type envelope struct {
	PublisherID uint64 `msgpack:"publisher_id"`
	Sequence    uint64 `msgpack:"sequence"`
	PublishedAt uint64 `msgpack:"published_at"`
	Topic       string `msgpack:"topic"`
	Payload     []byte `msgpack:"payload"`
}

// activeLoad is Dynamo's ActiveLoad; the Option fields are pointers, nil
// when absent.
type activeLoad struct {
	WorkerID            uint64  `msgpack:"worker_id"`
	DPRank              uint32  `msgpack:"dp_rank"`
	ActiveDecodeBlocks  *uint64 `msgpack:"active_decode_blocks"`
	ActivePrefillTokens *uint64 `msgpack:"active_prefill_tokens"`
	KVUsedBlocks        *uint64 `msgpack:"kv_used_blocks"`
}

// subscribe connects a client to the server at url and decodes every
// message on subject into the returned channel.
func subscribe(t *testing.T, url, subject string) (<-chan received, *nats.Conn) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatalf("nats client: %v", err)
	}
	t.Cleanup(nc.Close)
	out := make(chan received, 4096)
	_, err = nc.Subscribe(subject, func(m *nats.Msg) {
		r := received{raw: m.Data, subject: m.Subject, at: time.Now()}
		if err := msgpack.Unmarshal(m.Data, &r.env); err != nil {
			t.Errorf("decode envelope %x: %v", m.Data, err)
			return
		}
		if err := msgpack.Unmarshal(r.env.Payload, &r.load); err != nil {
			t.Errorf("decode payload %x: %v", r.env.Payload, err)
			return
		}
		out <- r
	})
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
	return out, nc
}

// next returns the next message within limit.
func next(t *testing.T, msgs <-chan received, limit time.Duration) received {
	t.Helper()
	select {
	case m := <-msgs:
		return m
	case <-time.After(limit):
		t.Fatalf("no message within %v", limit)
	}
	return received{}
}

// kv is the message's kv_used_blocks; the test fails when it is absent.
func kv(t *testing.T, m received) uint64 {
	t.Helper()
	if m.load.KVUsedBlocks == nil {
		t.Fatalf("message without kv_used_blocks: %+v", m.load)
	}
	return *m.load.KVUsedBlocks
}

// holdCompletions sends n streamed completions through slotgate, each holding KV
// blocks for a long while (no end of sequence before max_tokens), until ctx ends, which cancels them.
func holdCompletions(ctx context.Context, t *testing.T, proxy string, n int) *sync.WaitGroup {
	var wg sync.WaitGroup
	body := fmt.Sprintf(`{"model":"sim-model","prompt":%q,"max_tokens":4000,"ignore_eos":true,"stream":true}`, strings.Repeat("word ", 2000))
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+proxy+"/v1/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return // cancelled
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
		})
	}
	return &wg
}
