// Package admin serves slotgate's admin port: metrics, probes and control.
// It is never the proxy port, so a flood of proxied requests cannot starve
// a probe, and no admin path is ever forwarded to the engine.
//
// Paths: GET /metrics, GET /livez (the process is up), GET /readyz (200
// only when Ready returns nil), POST /drain (starts draining and returns at
// once, for a Kubernetes preStop hook).
package admin
