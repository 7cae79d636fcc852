// Package proxy is the HTTP adapter over package gate: it forwards HTTP
// requests to one inference engine, each admitted by the gate (N engine
// slots, a queue of Q split into policy classes, an immediate refusal
// beyond that) and sent through the engine client (package engine).
//
// One request is read in three files: handler.go walks it (ServeHTTP:
// admit, forward, finish), ../gate/admit.go decides its admission, and
// forward.go sends it to the engine and streams the answer back (the
// common request by plain.go's path, without httputil.ReverseProxy, by
// the same rules). An exchange (exchange.go) carries every fact about it.
//
// Invariants:
//
//   - Admission happens before the request body is read, except that a
//     body already over the limit by its declared length is refused
//     first. A refusal never touches the engine; it reads the body only
//     when the request waited.
//   - A request that waits (in the queue, or deferred by its classifier)
//     has its body read meanwhile (bounded by MaxRequestBodyBytes): Go's
//     HTTP/1.1 server notices a departed client only once the body was
//     read to its end, so reading it lets a client that leaves the queue
//     be removed at once, and never forwarded.
//   - A plain HTTP/1.1 request that has to wait, its body read whole,
//     waits parked (park.go): its connection leaves net/http, the
//     handler returns, and the connection comes back to the server with
//     the request ahead of it once the gate decides; the handler that
//     finds it there goes on with the same exchange. From the park to
//     that handler, one goroutine at a time holds the exchange, and
//     finish runs only in the second handler (or where the parking ends:
//     a client that left, a connection the server refused).
//   - After a slot is granted to a request that waited in the queue, its
//     context and its client's socket are checked again, so a request whose client is
//     gone never reaches the engine.
//   - The slot is held until the engine's answer ended or the client goes
//     away. An answer's end frees it before the client is given that end
//     (the handler ends the exchange before net/http writes the last
//     chunk; the front end, before it writes a small answer; the relay, as
//     it reads the engine's last chunk, relay.Stream.OnEnd): a client that
//     has its answer finds its slot free. It is released exactly once on
//     every path, including a panic (httputil.ReverseProxy, and the plain
//     path, abort a broken stream with one); a client that left while the
//     engine served it frees its slot after the gate's 5 ms abort grace,
//     not at once.
//   - Responses stream through unbuffered: Server-Sent Events and any other
//     response without a Content-Length are flushed on every write.
//   - Every request that goes through admission is reported once, with
//     exactly one outcome, and logged once in the access log.
//   - Once the relay has a stream's answer, the exchange holds no
//     *http.Request (slim): the relay's Done ends it with what the
//     exchange kept (its access-log fields, outcome and counts). When the
//     client's connection can lend its socket (relay.Mover, the proxy
//     port's), both sockets leave Go's netpoller for the stream; the ones
//     still of use are back in their connections before Done, and the
//     relay has closed the others.
//   - An early request's exchange, and its engine answer's parts, are
//     reused (exchangepool.go, engine.Client.Recycle) only where the front
//     end ended it itself, answered or refused, after the last use of
//     either; one handed on, lent or parked never is.
//   - Once the proxy closes its connections (CloseConnections: a drain
//     began), every HTTP/1.x answer says "Connection: close" and its
//     connection is not kept, a relayed stream's included: the front end
//     and the relay's waiting clients leave every request to net/http,
//     whose handler says so.
//   - Passthrough paths (engine probes) take no slot and are not counted.
//   - Refusals are mapped to answers in one function (answers.of), and
//     engine failures in another (engineError).
//   - An early refusal (AnswerEarly's refusals, refuseHead, asked
//     by the proxy port's listener before net/http reads the request)
//     answers only a request the gate refuses at once and whose answer
//     net/http would write byte for byte the same but for the Date; it is
//     counted, reported and logged as ServeHTTP's refusal is, and a
//     request it declines is left untouched.
//   - A request the front end serves (AnswerEarly) is admitted at once or
//     not at all, and sent to the engine at most once: whatever the front
//     end does not finish goes to net/http as a Handed, which the handler
//     goes on from (or Abandon ends), never from the start. A request that
//     would wait is parked by the front end from its bytes (earlypark.go:
//     its place taken in the queue once net/http let go of the
//     connection, gate.ParkAtOnce), or goes to net/http holding its queue
//     place, which the handler hands to the gate (gate.Request.Held:
//     taken if the request waits, given back otherwise), and Abandon
//     gives back if net/http never serves it: a place is never held past
//     its request. What it writes
//     is what net/http and the plain path would write but the Date; the
//     engine reads what it would read from the plain path (both fuzzed).
//   - A stream the front end serves (Early.Lent) has its head written
//     as handOff writes it, and the relay carries its body only once
//     net/http let go of the connection (Lent.Start, from the
//     listener's Close): from then on it is a relayed stream as any,
//     but that its client, with nothing read past its request, is kept
//     in the relay after the answer until its next request, which the
//     relay hands to Relay.Resume (relay.Stream.Park).
//   - A client the listener refused time and again may wait in the
//     relay between requests (earlywait.go, Lent.Waits): the relay's
//     loop refuses only a request it read whole, alone, that the front
//     end would refuse early (refuseHead, the same answer, count and log
//     line), and gives every other back to the server with its bytes
//     ahead of the connection, which the listener frames first.
package proxy
