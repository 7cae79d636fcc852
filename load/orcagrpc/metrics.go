package orcagrpc

import (
	"maps"
	"math"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/grpc/orca"

	"github.com/slotgate/slotgate/load/report"
)

// The named metrics of a report (in the HTTP header's TEXT form with the
// prefix "named_metrics.").
const (
	// MetricKVCacheUsage is the KV cache usage, 0..1 (report.Snapshot.KVUsage);
	// absent when no rank knows its KV capacity.
	MetricKVCacheUsage = "kv_cache_usage"
	// MetricActivePrefillTokens is the prompt tokens not yet computed,
	// summed over the ranks that know them.
	MetricActivePrefillTokens = "active_prefill_tokens"
	// MetricActiveDecodeBlocks is slotgate's estimate of the KV blocks its
	// requests in flight hold, summed over the ranks that know it; absent
	// when none does.
	MetricActiveDecodeBlocks = "active_decode_blocks"
	// MetricInFlight is the requests holding an engine slot.
	MetricInFlight = "in_flight"
	// MetricQueued is the requests waiting in slotgate's queue.
	MetricQueued = "queued"
	// MetricPrefilling is the requests in flight that have not had their
	// first token yet.
	MetricPrefilling = "prefilling"
	// MetricBusy is 1 when the worker is busy (report.Snapshot.Busy), else 0.
	MetricBusy = "busy"
	// MetricPrefillTokens is the prompt tokens of the requests in flight
	// before their first token, as slotgate's limiters count them
	// (report.Requests.PrefillTokens), where active_prefill_tokens is the
	// engine's figure when it has one. MetricQueuedTokens is the prompt
	// tokens of the requests in slotgate's queue. Both are reported only
	// while a token limit is in force: without one slotgate does not count
	// tokens, and a 0 would say "no tokens" where the truth is "not
	// counted".
	MetricPrefillTokens = "prefill_tokens"
	MetricQueuedTokens  = "queued_tokens"
)

// unset is orca.ServerMetrics' value for a metric that is not reported.
const unset = -1

// Metrics maps s to ORCA's server metrics, in grpc-go's form, where -1 is
// unset: AppUtilization is s.Utilization(), and NamedMetrics holds the
// Metric* values, those unknown left out (the token counts without a
// token limit). QPS is unset, since a snapshot
// holds no rate (the Reporter measures it); CPU, memory and errors are
// unset, and the Utilization and RequestCost maps are empty (not nil).
func Metrics(s *report.Snapshot) *orca.ServerMetrics {
	sm := empty()
	if u, ok := s.Utilization(); ok {
		sm.AppUtilization = u
	}
	named := sm.NamedMetrics
	if usage, ok := s.KVUsage(); ok {
		named[MetricKVCacheUsage] = usage
	}
	named[MetricActivePrefillTokens] = float64(s.PrefillTokens())
	if blocks, ok := s.DecodeBlocks(); ok {
		named[MetricActiveDecodeBlocks] = float64(blocks)
	}
	named[MetricInFlight] = float64(s.Requests.InFlight)
	named[MetricQueued] = float64(s.Requests.Queued)
	named[MetricPrefilling] = float64(s.Requests.Prefilling)
	if r := &s.Requests; r.PrefillTokenLimit > 0 || r.QueueTokenLimit > 0 {
		named[MetricPrefillTokens] = float64(r.PrefillTokens)
		named[MetricQueuedTokens] = float64(r.QueuedTokens)
	}
	named[MetricBusy] = 0
	if s.Busy {
		named[MetricBusy] = 1
	}
	dropInvalid(sm)
	return sm
}

// dropInvalid leaves out of sm what no balancer takes: a value that is
// not a finite number of at least 0 (Envoy refuses the whole report for
// one, and the proto's rules forbid it). A snapshot's counts are never
// negative; this keeps a report valid whatever it is given.
func dropInvalid(sm *orca.ServerMetrics) {
	if !valid(sm.AppUtilization) {
		sm.AppUtilization = unset
	}
	maps.DeleteFunc(sm.NamedMetrics, func(_ string, v float64) bool { return !valid(v) })
}

func valid(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// empty is a report with every value unset and every map empty.
func empty() *orca.ServerMetrics {
	return &orca.ServerMetrics{
		CPUUtilization: unset, MemUtilization: unset, AppUtilization: unset, QPS: unset, EPS: unset,
		Utilization: map[string]float64{}, RequestCost: map[string]float64{}, NamedMetrics: map[string]float64{},
	}
}

// toProto is sm as an OrcaLoadReport, as grpc-go's own service writes it:
// an unset value is left 0, and the maps are copied.
func toProto(sm *orca.ServerMetrics) *v3orcapb.OrcaLoadReport {
	r := &v3orcapb.OrcaLoadReport{
		Utilization:  maps.Clone(sm.Utilization),
		RequestCost:  maps.Clone(sm.RequestCost),
		NamedMetrics: maps.Clone(sm.NamedMetrics),
	}
	set := func(dst *float64, v float64) {
		if v != unset {
			*dst = v
		}
	}
	set(&r.CpuUtilization, sm.CPUUtilization)
	set(&r.MemUtilization, sm.MemUtilization)
	set(&r.ApplicationUtilization, sm.AppUtilization)
	set(&r.RpsFractional, sm.QPS)
	set(&r.Eps, sm.EPS)
	return r
}

// clone is a deep copy of sm, whose maps the caller may modify (grpc-go's
// per-call interceptor merges into them).
func clone(sm *orca.ServerMetrics) *orca.ServerMetrics {
	c := *sm
	c.Utilization, c.RequestCost, c.NamedMetrics = maps.Clone(sm.Utilization), maps.Clone(sm.RequestCost), maps.Clone(sm.NamedMetrics)
	return &c
}
