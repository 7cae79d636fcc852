// Package fastplane is an experimental HTTP/1.1 data plane for the proxy
// port (issue 17), served by github.com/valyala/fasthttp instead of
// net/http and httputil.ReverseProxy, over the same admission (package
// gate). It exists to measure whether a server that spends one goroutine
// and fasthttp's pooled buffers per connection, instead of net/http's two
// goroutines and per-connection bufio pair, makes slotgate's stream path
// and fast path cheaper. slotgate serves it with --data-plane fasthttp.
//
// One request is read in three files: handler.go walks it (admit,
// forward, finish), forward.go sends it to the engine with fasthttp's
// HostClient and relays the answer, and answer.go turns a refusal or an
// engine failure into the same answer the net/http path gives.
//
// Invariants:
//
//   - Every request but a passthrough path's goes through gate.Admit, and
//     its exchange ends with gate.Finish exactly once: at once when it was
//     refused or the engine failed before its answer, else when fasthttp
//     closes the relayed answer (relay.CloseWithError), which it does once
//     the answer was written, the client went away, or the connection was
//     torn down.
//   - fasthttp reads a request's body whole before the handler runs, so a
//     queued request needs no body read to notice its client leave: its
//     Watch (watch.go) parks one goroutine in the netpoller on the client's
//     socket while it waits, peeks (MSG_PEEK) when the socket becomes
//     readable, and cancels the request's context when the peer closed.
//     The goroutine ends when the wait does (Settle).
//   - Answers stream through unbuffered: fasthttp writes each read of the
//     engine's body as one chunk and flushes it, so an SSE event goes out
//     as soon as it is read.
//   - Refusals carry the net/http path's status, JSON body,
//     X-Slotgate-Reason, Retry-After and X-Request-Id.
//   - Framing is checked before fasthttp parses: command serves the plane
//     behind the same strict listener as the net/http plane, and strict.go
//     answers its stand-in heads (and CONNECT) as proxy.Strict does. The
//     engine gets origin form, its own Host, and no hop-by-hop header.
//   - An engine request is never sent twice, but for a reused connection
//     the engine closed before any byte of its answer (retryStale).
//
// It does not do what the net/http path does beyond the benchmark's
// scenarios: no h2c or gRPC on the proxy port, no admission policy, no
// limits per rank, no token limits or token counting, no first-token
// watchdog, no ORCA header, no access log; a late body is not answered
// 408 (see badInput). command refuses to combine --data-plane fasthttp
// with the settings that need them.
package fastplane
