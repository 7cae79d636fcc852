package main

import (
	"fmt"
	"io"
)

// serve starts enginesim and slotgate (N, W, Q as in compare mode), prints
// a guided tour and serves until Ctrl-C.
func serve(s *stack, out io.Writer) error {
	o := s.o
	engineURL, err := s.startEngine("enginesim")
	if err != nil {
		return err
	}
	sg, err := s.startSlotgate(engineURL, true)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "enginesim (%d sequences) at %s\nslotgate (N=%d, W=%d, Q=%d) at %s, admin %s\n",
		o.slots, engineURL, o.slots, o.waiting, o.queue, sg.proxy, sg.admin)
	printTour(out, o, sg)
	<-s.ctx.Done()
	return nil
}

// printTour tells a new user what to send and where to look.
func printTour(out io.Writer, o options, sg slotgateURLs) {
	fmt.Fprintf(out, `
A guided tour (Ctrl-C stops everything):

1. Send a request through slotgate, whole or streamed:
     curl -s %[1]s/v1/completions -H 'Content-Type: application/json' \
          -d '{"model":"sim-model","prompt":"Hello","max_tokens":16}'
     curl -sN %[1]s/v1/chat/completions -H 'Content-Type: application/json' \
          -d '{"model":"sim-model","messages":[{"role":"user","content":"Hi"}],"max_tokens":32,"stream":true}'

2. Open the status page in a browser: %[2]s/
   It shows the N slots, the W places before the first token and the Q
   queue places, live. Fill them with 10 s of arrivals above what the
   engine serves, from clients that retry as the OpenAI SDKs do:
     %[4]s/slotgate-loadgen --url %[1]s --mode open --rate 40 --duration 10s --retry 3 --deadline 10s
   Once N+Q=%[3]d are taken, the next request gets 529 "Server overloaded:
   worker at capacity" at once, with Retry-After; repeat the first curl
   with -i while the burst runs to see one.

3. Read the worker's load as a frontend does:
     curl -s %[2]s/v1/load
   requests.in_flight and queued against limit (N) and queue_limit (Q),
   prefilling against waiting_limit (W), busy, and the engine's KV blocks.
     curl -sN %[2]s/v1/load/stream
   the same, on every change and every second.

4. Read the metrics as Prometheus does, on the admin port:
     curl -s %[2]s/metrics | grep -E '^dynamo_'
   dynamo_engine_request (at most N) and dynamo_request_queue (at most Q)
   are the slots and queue in use; dynamo_rejection_request_total counts
   every refusal; dynamo_backend_admission_* are Dynamo 1.7's names, the
   limits among them.
     curl -s %[2]s/readyz
`, sg.proxy, sg.admin, o.slots+o.queue, o.bin)
}
