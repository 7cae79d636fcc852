// Package admin serves slotgate's admin port: metrics, probes and control.
// It is never the proxy port, so a flood of proxied requests cannot starve
// a probe, and no admin path is ever forwarded to the engine.
//
// Paths: GET / (the status page, one self-contained HTML page fed by the
// load stream and /metrics), GET /metrics, GET /livez (the process is up),
// GET /readyz (200 only when Ready returns nil), POST /drain (starts
// draining and returns at once, for a Kubernetes preStop hook).
//
// # Authentication
//
// With a Token (--admin-token-file), every request but a GET or a HEAD
// must carry "Authorization: Bearer <token>": POST /drain, POST /limits,
// POST /busy_threshold and any route added later. One wrapper around the
// whole mux applies it, so no route can be left out. A missing or wrong
// token answers 401 with WWW-Authenticate: Bearer realm="slotgate-admin"
// and {"error":"<message>"}, the shape of the other admin JSON errors, and
// the route's handler never runs. GET and HEAD stay open, so probes,
// Prometheus and pprof need no token. The admin gRPC port
// (--admin-grpc-listen: LoadReporter and gRPC health) is read-only and
// takes no token.
//
// The token is compared in constant time, through SHA-256 digests so that
// its length does not leak either, and the file is read again when it
// changes (see Token). Without a token the admin port is open to whoever
// reaches it: bind it to a pod-local address.
package admin
