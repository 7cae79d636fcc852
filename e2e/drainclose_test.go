package e2e_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
)

// A drain closes kept connections: from the moment it begins, every
// answer on a kept HTTP/1.1 connection says "Connection: close" and the
// connection closes after it, whichever part of slotgate answers (the
// listener's front end, net/http's handler, a client waiting in the relay,
// a stream's head). A client kept connected would otherwise go on sending
// to a pod that left its Service's endpoints, and after the drain delay
// get 503 draining on every request until the pod exits.

// keptClient is a client's kept connection to the proxy port.
type keptClient struct {
	c  net.Conn
	br *bufio.Reader
}

func dialKept(t *testing.T, proxyURL string) keptClient {
	t.Helper()
	c, br := keptConn(t, proxyURL)
	return keptClient{c: c, br: br}
}

// ask sends raw and reads its answer, checking its status and whether it
// closes the connection; one that says so must then close it.
func (k keptClient) ask(t *testing.T, what, raw string, status int, closes bool) string {
	t.Helper()
	writeRaw(t, k.c, raw)
	resp, body := readKept(t, k.br)
	if resp.StatusCode != status || resp.Close != closes {
		t.Fatalf("%s: %s, Connection %q (closes: %v), want %d closing: %v; body %s",
			what, resp.Status, resp.Header.Get("Connection"), resp.Close, status, closes, body)
	}
	if closes {
		k.closed(t, what)
	}
	return body
}

// closed checks that slotgate closed the connection: the next read finds
// its end, with nothing more sent.
func (k keptClient) closed(t *testing.T, what string) {
	t.Helper()
	if b, err := k.br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("%s: after an answer that closes the connection, read %q, %v; want EOF", what, b, err)
	}
}

// TestDrainClosesKeptConnections: with the only slot held and no queue,
// a kept connection refused once (net/http's, the front end answering
// its requests) and one refused time and again (waiting in the relay)
// each get their next answer, after POST /drain, with "Connection: close",
// and lose their connection after it; so does an answer served once the
// slot is free, and, after the drain delay, the 503 draining of a
// connection kept from before the drain.
func TestDrainClosesKeptConnections(t *testing.T) {
	const drainDelay = 5 * time.Second // the steps before it take milliseconds, a loaded CI machine's seconds at most
	full := holdTheSlot(t, "--drain-delay", drainDelay.String(), "--log-level", "info")
	sg := full.sg
	waiting := keptClient{c: full.c, br: full.br}
	for i := range 6 {
		waiting.ask(t, "a refusal before the drain", completion(fmt.Sprint("refused-", i)), 529, false)
	}
	eventually(t, "the refused connection to wait in the relay", func() bool {
		return sg.metric("slotgate_relay_idle_connections") == 1
	})
	once := dialKept(t, sg.proxy)
	once.ask(t, "a refusal before the drain", completion("once"), 529, false)
	late := dialKept(t, sg.proxy)
	late.ask(t, "a refusal before the drain", completion("late"), 529, false)

	if code, _ := postJSON(t, sg.admin+"/drain", ""); code != http.StatusAccepted {
		t.Fatalf("POST /drain: %d", code)
	}
	waiting.ask(t, "the connection that waited in the relay", completion("waited"), 529, true)
	once.ask(t, "net/http's kept connection", completion("once-again"), 529, true)

	full.release()
	served := dialKept(t, sg.proxy)
	served.ask(t, "a request served during the drain delay", completion("served"), http.StatusOK, true)

	sg.log.WaitFor(t, "new requests are now refused", waitLimit)
	body := late.ask(t, "a kept connection after the drain delay", completion("draining"), http.StatusServiceUnavailable, true)
	if e := decodeError(t, body); e.Error.Message != "Server unavailable: draining" {
		t.Errorf("after the drain delay: %s", body)
	}
}

// TestDrainClosesStreamConnections: a stream whose head goes out after a
// drain began says "Connection: close", and its connection closes after
// the stream's [DONE]; a client whose stream ended before the drain, kept
// by the relay until its next request, gets that request's answer
// closing its connection.
func TestDrainClosesStreamConnections(t *testing.T) {
	eng := startEnginesim(t)
	sg := start(t, eng, nil, "--drain-delay", "1m")
	stream := func(id string) string {
		body := `{"model":"sim-model","prompt":"hi","max_tokens":4,"ignore_eos":true,"stream":true}`
		return "POST /v1/completions HTTP/1.1\r\nHost: slotgate\r\nContent-Type: application/json\r\nX-Request-Id: " + id +
			"\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	}
	kept := dialKept(t, sg.proxy)
	if body := kept.ask(t, "a stream before the drain", stream("before"), http.StatusOK, false); !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("stream before the drain: %q", body)
	}
	eventually(t, "the client to be kept in the relay", func() bool {
		return sg.metric("slotgate_relay_idle_connections") == 1
	})

	if code, _ := postJSON(t, sg.admin+"/drain", ""); code != http.StatusAccepted {
		t.Fatalf("POST /drain: %d", code)
	}
	if body := kept.ask(t, "the kept client's next stream", stream("after"), http.StatusOK, true); !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("stream after the drain: %q", body)
	}
	fresh := dialKept(t, sg.proxy)
	if body := fresh.ask(t, "a new client's stream", stream("fresh"), http.StatusOK, true); !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("a new client's stream: %q", body)
	}
}

// TestDrainClosesGRPCConnections: a gRPC call on the proxy port answered
// after a drain began closes its HTTP/2 connection too (GOAWAY): the
// client's channel leaves READY, and its next call connects again.
func TestDrainClosesGRPCConnections(t *testing.T) {
	sg := start(t, newEngine(t).url(), nil, "--drain-delay", "1h")
	conn := dialGRPC(t, sg.proxy[len("http://"):])
	health := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	check := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		if h, err := health.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || h.GetStatus() != want {
			t.Fatalf("health check: %v %v, want %v", h.GetStatus(), err, want)
		}
	}
	eventually(t, "SERVING", func() bool {
		h, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		return err == nil && h.GetStatus() == healthpb.HealthCheckResponse_SERVING
	})
	if s := conn.GetState(); s != connectivity.Ready {
		t.Fatalf("channel %v after a call, want READY", s)
	}
	if code, _ := postJSON(t, sg.admin+"/drain", ""); code != http.StatusAccepted {
		t.Fatalf("POST /drain: %d", code)
	}
	check(healthpb.HealthCheckResponse_NOT_SERVING)
	left, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	if !conn.WaitForStateChange(left, connectivity.Ready) {
		t.Fatal("the channel stayed READY after a call answered during the drain: no GOAWAY")
	}
	check(healthpb.HealthCheckResponse_NOT_SERVING) // over a new connection
}

// TestDrainGOAWAYOnGRPCListen: on --grpc-listen too, a drain sends every
// connection a GOAWAY when it begins, and the calls in flight go on to
// their end; a connection made during the drain delay is served, then sent
// its own GOAWAY about a second later.
func TestDrainGOAWAYOnGRPCListen(t *testing.T) {
	t.Parallel()
	eng := newGRPCEngine(t) // holds every call until released
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	grpcAddr := ln.Addr().String()
	ln.Close()
	sg := start(t, newEngine(t).url(), nil, "--grpc-listen", grpcAddr, "--drain-delay", "1h",
		"--engine-grpc-url", "http://"+eng.addr)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	conn := dialGRPC(t, grpcAddr)
	eventually(t, "SERVING on --grpc-listen", func() bool {
		h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		return err == nil && h.GetStatus() == healthpb.HealthCheckResponse_SERVING
	})
	inFlight := make(chan error, 1)
	go func() { inFlight <- streamCall(ctx, testgrpc.NewTestServiceClient(conn)) }()
	eventually(t, "the call held by the engine", func() bool { return eng.inFlight.Load() == 1 })

	if code, _ := postJSON(t, sg.admin+"/drain", ""); code != http.StatusAccepted {
		t.Fatalf("POST /drain: %d", code)
	}
	left, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	if !conn.WaitForStateChange(left, connectivity.Ready) {
		t.Fatal("the channel stayed READY after the drain began: no GOAWAY")
	}
	select {
	case err := <-inFlight:
		t.Fatalf("the call in flight ended with the GOAWAY: %v", err)
	default:
	}
	eng.release()
	if err := <-inFlight; err != nil {
		t.Errorf("the call in flight at the GOAWAY: %v, want its whole answer", err)
	}

	// A client that still reaches the pod during the drain delay.
	late := dialGRPC(t, grpcAddr)
	if err := streamCall(ctx, testgrpc.NewTestServiceClient(late)); err != nil {
		t.Fatalf("a call during the drain delay: %v, want it served", err)
	}
	if s := late.GetState(); s != connectivity.Ready {
		t.Fatalf("channel %v after a call, want READY", s)
	}
	left2, stop2 := context.WithTimeout(ctx, 5*time.Second)
	defer stop2()
	if !late.WaitForStateChange(left2, connectivity.Ready) {
		t.Fatal("a connection made during the drain stayed READY: no GOAWAY")
	}
}
