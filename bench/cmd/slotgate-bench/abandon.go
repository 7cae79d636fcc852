package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Abandoned requests: issue 6 has the clients killed, so they are a
// separate process, `slotgate-bench abandon-clients`, that the driver kills
// with SIGKILL: the kernel then closes all their sockets at once, as when
// a client process dies, with no orderly cancel from an HTTP library.

// abandonClientsMain is the `abandon-clients` subcommand: it sends --n
// requests to --url, each on its own connection, prints "sent" once all
// are written and then "answer STATUS" for each answer that comes back,
// until it is killed (or exits by itself after --life, so that it never
// outlives a run).
func abandonClientsMain(args []string) error {
	fs := flag.NewFlagSet("abandon-clients", flag.ContinueOnError)
	target := fs.String("url", "", "http://host:port/path to send the requests to")
	n := fs.Int("n", 40, "number of clients, one request and one connection each")
	life := fs.Duration("life", 30*time.Second, "exit after this long even if not killed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		return fmt.Errorf("--url %q: want http://host:port/path", *target)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *life)
	defer cancel()
	conns, err := openRequests(ctx, u.Host, u.RequestURI(), *n)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	say := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Println(s)
	}
	say("sent")
	for _, c := range conns {
		go func() {
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				say("answer " + strconv.Itoa(resp.StatusCode))
			}
		}()
	}
	<-ctx.Done()
	closeAll(conns)
	return nil
}

// killedClients runs abandon-clients against url, kills it leaveAfter
// after its requests were sent, and returns how many answers came back
// before that.
func killedClients(ctx context.Context, e *env, url string, n int, leaveAfter time.Duration) (int, error) {
	ch, err := startChild(e.procs, e.run, "abandon-clients", "--url", url, "--n", strconv.Itoa(n))
	if err != nil {
		return 0, err
	}
	defer e.procs.kill(ch.cmd)
	if _, err := ch.await(ctx, "sent", 5*time.Second); err != nil {
		return 0, err
	}
	if !sleep(ctx, leaveAfter) {
		return 0, ctx.Err()
	}
	e.procs.kill(ch.cmd)
	answered := 0
	for l := range ch.lines { // closed when the dead process's stdout closes
		if strings.HasPrefix(l, "answer ") {
			answered++
		}
	}
	return answered, nil
}

// abandoned is the abandon scenario's measurement: 40 clients of 1 s
// requests killed at 0.5 s; then, once the proxy has had time to forward
// whatever it still holds, the engine's own count of what reached it.
func abandoned(ctx context.Context, t trial) (map[string]float64, error) {
	answered, err := killedClients(ctx, t.env, t.url+"/work?ms=1000", 40, 500*time.Millisecond)
	if err != nil {
		return nil, err
	}
	// Anything a proxy still queued would reach the engine once the first
	// 8 end: at 0.5 s when it aborts them with their clients, at 1 s
	// otherwise. 1.5 s covers both.
	if !sleep(ctx, 1500*time.Millisecond) {
		return nil, ctx.Err()
	}
	st, err := t.eng.stats(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]float64{
		"reached engine": float64(st.Received),
		"engine max":     float64(st.MaxInFlight),
		"answered":       float64(answered),
	}, nil
}
