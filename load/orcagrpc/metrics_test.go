package orcagrpc_test

import (
	"maps"
	"math"
	"reflect"
	"slices"
	"testing"

	"google.golang.org/grpc/orca"

	"github.com/slotgate/slotgate/load/orcagrpc"
	"github.com/slotgate/slotgate/load/report"
)

// engineN and slotgateN are counts from the engine and from slotgate.
func engineN(n int64) report.Field   { return report.Field{N: n, Source: report.SourceEngine} }
func slotgateN(n int64) report.Field { return report.Field{N: n, Source: report.SourceSlotgate} }

// metricsCase is a snapshot and the metrics it maps to.
type metricsCase struct {
	name    string
	snap    report.Snapshot
	app     float64            // -1: unset
	named   map[string]float64 // without the counts every case has
	counts  [3]float64         // in_flight, queued, prefilling
	busy    float64
	prefill float64
}

var metricsCases = []metricsCase{
	{
		name: "nothing known: no limit, no KV",
		snap: report.Snapshot{Ranks: []report.Rank{{}}},
		app:  -1,
	},
	{
		name:   "slots in use when no KV is known",
		snap:   report.Snapshot{Requests: report.Requests{InFlight: 3, Queued: 2, Prefilling: 1, Limit: 4, QueueLimit: 8}, Ranks: []report.Rank{{}}},
		app:    0.75,
		counts: [3]float64{3, 2, 1},
	},
	{
		name:   "slots capped at 1 after the limit was lowered",
		snap:   report.Snapshot{Requests: report.Requests{InFlight: 5, Limit: 2}, Ranks: []report.Rank{{}}},
		app:    1,
		counts: [3]float64{5, 0, 0},
	},
	{
		name: "KV from the engine, before slots",
		snap: report.Snapshot{
			Requests: report.Requests{InFlight: 4, Limit: 4},
			Ranks:    []report.Rank{{KVTotalBlocks: engineN(1000), KVUsedBlocks: engineN(250), ActivePrefillTokens: engineN(512)}},
		},
		app:     0.25,
		named:   map[string]float64{orcagrpc.MetricKVCacheUsage: 0.25},
		counts:  [3]float64{4, 0, 0},
		prefill: 512,
	},
	{
		name: "stale engine: slotgate's decode blocks",
		snap: report.Snapshot{
			Stale: true,
			Ranks: []report.Rank{{KVTotalBlocks: engineN(1000), KVUsedBlocks: engineN(900), ActiveDecodeBlocks: slotgateN(100)}},
		},
		app:   0.1,
		named: map[string]float64{orcagrpc.MetricKVCacheUsage: 0.1, orcagrpc.MetricActiveDecodeBlocks: 100},
	},
	{
		name: "KV capacity known but no usage: slots",
		snap: report.Snapshot{
			Requests: report.Requests{InFlight: 1, Limit: 8},
			Ranks:    []report.Rank{{KVTotalBlocks: engineN(1000)}},
		},
		app:    0.125,
		counts: [3]float64{1, 0, 0},
	},
	{
		name: "two ranks, one without capacity; busy",
		snap: report.Snapshot{
			Busy: true,
			Ranks: []report.Rank{
				{DPRank: 0, KVTotalBlocks: engineN(100), KVUsedBlocks: engineN(50), ActivePrefillTokens: engineN(30), ActiveDecodeBlocks: slotgateN(7)},
				{DPRank: 1, KVUsedBlocks: engineN(10), ActivePrefillTokens: slotgateN(40)},
			},
		},
		app:     0.5,
		named:   map[string]float64{orcagrpc.MetricKVCacheUsage: 0.5, orcagrpc.MetricActiveDecodeBlocks: 7},
		busy:    1,
		prefill: 70,
	},
	{
		name: "token counts with a prefill token limit",
		snap: report.Snapshot{
			Requests: report.Requests{InFlight: 2, Queued: 1, Prefilling: 2, Limit: 4, PrefillTokens: 1500, QueuedTokens: 600,
				PrefillTokenLimit: 2000},
			Ranks: []report.Rank{{}},
		},
		app:    0.5,
		named:  map[string]float64{orcagrpc.MetricPrefillTokens: 1500, orcagrpc.MetricQueuedTokens: 600},
		counts: [3]float64{2, 1, 2},
	},
	{
		name: "token counts with a queue token limit only, none queued",
		snap: report.Snapshot{
			Requests: report.Requests{InFlight: 1, Limit: 4, PrefillTokens: 10, QueueTokenLimit: 5000},
			Ranks:    []report.Rank{{}},
		},
		app:    0.25,
		named:  map[string]float64{orcagrpc.MetricPrefillTokens: 10, orcagrpc.MetricQueuedTokens: 0},
		counts: [3]float64{1, 0, 0},
	},
	{
		// Counts without a limit cannot come from slotgate, which counts
		// nothing then; were they there, they would still be left out.
		name: "no token limit: no token counts",
		snap: report.Snapshot{
			Requests: report.Requests{InFlight: 1, Limit: 4, PrefillTokens: 10, QueuedTokens: 3},
			Ranks:    []report.Rank{{}},
		},
		app:    0.25,
		counts: [3]float64{1, 0, 0},
	},
}

// want is the metrics the case maps to, in grpc-go's form.
func (c metricsCase) want() *orca.ServerMetrics {
	named := map[string]float64{
		orcagrpc.MetricActivePrefillTokens: c.prefill,
		orcagrpc.MetricInFlight:            c.counts[0],
		orcagrpc.MetricQueued:              c.counts[1],
		orcagrpc.MetricPrefilling:          c.counts[2],
		orcagrpc.MetricBusy:                c.busy,
	}
	maps.Copy(named, c.named)
	return &orca.ServerMetrics{
		CPUUtilization: -1, MemUtilization: -1, AppUtilization: c.app, QPS: -1, EPS: -1,
		Utilization: map[string]float64{}, RequestCost: map[string]float64{}, NamedMetrics: named,
	}
}

func TestMetrics(t *testing.T) {
	for _, tc := range metricsCases {
		t.Run(tc.name, func(t *testing.T) {
			got := orcagrpc.Metrics(&tc.snap)
			if want := tc.want(); !reflect.DeepEqual(got, want) {
				t.Errorf("Metrics =\n%+v\nwant\n%+v", got, want)
			}
			u, ok := tc.snap.Utilization()
			if ok != (tc.app >= 0) || (ok && u != tc.app) {
				t.Errorf("Utilization = %v, %v; want %v", u, ok, tc.app)
			}
		})
	}
}

// TestMetricsInRange: whatever the counts, the values are finite and at
// least 0, and application_utilization at most 1, as the proto's rules
// and weighted round robin want.
func TestMetricsInRange(t *testing.T) {
	for _, inFlight := range []int{0, 1, 7, math.MaxInt32} {
		for _, used := range []int64{0, 3, 1 << 40} {
			s := report.Snapshot{
				Requests: report.Requests{InFlight: inFlight, Limit: 7},
				Ranks:    []report.Rank{{KVTotalBlocks: engineN(5), KVUsedBlocks: engineN(used)}},
			}
			sm := orcagrpc.Metrics(&s)
			if sm.AppUtilization < 0 || sm.AppUtilization > 1 {
				t.Errorf("in_flight %d, used %d: application_utilization %v", inFlight, used, sm.AppUtilization)
			}
			for _, name := range slices.Sorted(maps.Keys(sm.NamedMetrics)) {
				if v := sm.NamedMetrics[name]; v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
					t.Errorf("in_flight %d, used %d: %s = %v", inFlight, used, name, v)
				}
			}
		}
	}
}
