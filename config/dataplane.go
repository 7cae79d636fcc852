package config

import "github.com/slotgate/slotgate/internal/flagenv"

// The data planes --data-plane names.
const (
	// DataPlaneNetHTTP serves the proxy port with net/http: every feature.
	DataPlaneNetHTTP = "nethttp"
	// DataPlaneFastHTTP serves it with fasthttp (package fastplane), an
	// experiment of issue 17: HTTP/1.1 admitted by the same gate, without
	// the features below.
	DataPlaneFastHTTP = "fasthttp"
)

// fillDataPlane reads --data-plane. It runs last: the fasthttp plane
// refuses, naming each, the settings it does not carry out, rather than
// ignore them.
func (c *Config) fillDataPlane(r *raw, v *flagenv.Checker) {
	c.DataPlane = v.OneOf("data-plane", r.DataPlane, DataPlaneNetHTTP, DataPlaneFastHTTP)
	if c.DataPlane != DataPlaneFastHTTP {
		return
	}
	lacks := []struct {
		set  bool
		flag string
		what string
	}{
		{c.AdmissionConfig != "", "admission-config", "admission policies"},
		{c.EngineGRPCURL != nil, "engine-grpc-url", "gRPC"},
		{c.GRPCListen != "", "grpc-listen", "gRPC"},
		{c.PerRankLimits, "per-rank-limits", "limits per rank"},
		{c.EnginePrefillTokenLimit > 0, "engine-prefill-token-limit", "token limits (it counts no prompt)"},
		{c.RequestQueueTokenLimit > 0, "request-queue-token-limit", "token limits (it counts no prompt)"},
		{c.FirstTokenTimeout > 0, "first-token-timeout", "the first-token watchdog"},
		{c.ORCAHeader, "orca-header", "ORCA headers"},
	}
	for _, l := range lacks {
		if l.set {
			v.Fail("data-plane", r.DataPlane, "the fasthttp plane lacks "+l.what+": unset "+v.Name(l.flag)+" or use nethttp")
		}
	}
}
