// Package orcagrpc reports the worker's load (package load/report) to
// gRPC load balancers in ORCA's form (Open Request Cost Aggregation, the
// xds.data.orca.v3.OrcaLoadReport message): out of band, as the
// xds.service.orca.v3.OpenRcaService that a gRPC client's
// weighted_round_robin balancer opens on every backend it balances, and
// per call, as the endpoint-load-metrics-bin trailer (gRFC A51).
//
// It follows grpc-go's orca package, the recorder apart from the
// service:
//
//   - A Reporter is fed every published snapshot (Update, from the Hub's
//     OnPublish) and keeps the latest report ready, in each form a reader
//     wants: the proto (Report), grpc-go's orca.ServerMetrics
//     (ServerMetrics, so a Reporter is an orca.ServerMetricsProvider) and
//     the trailer (Trailer). Metrics is the mapping itself.
//   - A Service is the OpenRcaService over a Reporter, registered on the
//     gRPC proxy's own server, so that it answers on the address of the
//     calls it balances. It is slotgate's own rather than grpc-go's
//     orca.Service, which raises every reporting interval to at least
//     30 s: a balancer asking for reports every 200 ms would then weigh
//     its backends on load half a minute old. Service honours down to
//     MinReportingInterval (100 ms).
//
// The report:
//
//	application_utilization   the KV cache usage; when no rank knows its
//	                          KV capacity, the engine slots in use,
//	                          in_flight/N; absent when neither is known
//	rps_fractional            requests admitted per second, HTTP and gRPC
//	                          together (the gate's admissions), over the
//	                          last RateWindow to 2×RateWindow
//	named_metrics             kv_cache_usage and active_decode_blocks
//	                          (when known), active_prefill_tokens,
//	                          in_flight, queued, prefilling, busy (0 or 1)
//
// Invariants, each checked by the tests:
//
//   - HTTP and gRPC agree: application_utilization and every named metric
//     of the ORCA header (report.ORCAText) have the same value here, for
//     the same snapshot. prefilling, the requests in flight before their
//     first token, is the one named metric the header lacks.
//   - Unknown is absent, never 0: kv_cache_usage and active_decode_blocks
//     are left out when no rank knows them, and application_utilization
//     and rps_fractional are unset (-1 in orca.ServerMetrics; 0, which a
//     balancer ignores, on the wire, where proto3 has no presence).
//   - Every value is finite and at least 0, as the proto's validation
//     rules require; application_utilization is at most 1.
//   - A stream sends the latest report at once and then one every
//     interval, the client's report_interval raised to the service's
//     minimum. It ends when its client leaves (CANCELED,
//     DEADLINE_EXCEEDED), when a Send fails, or when draining begins
//     (UNAVAILABLE, also the answer to every stream opened after): a
//     balancer holds its stream for as long as its connection, and a
//     graceful stop would otherwise wait for every client to hang up. Its
//     handler leaves no goroutine behind.
//   - Update does the work once per snapshot (the Hub publishes at most
//     one per 10 ms), so that a stream's Send or a call's Trailer only
//     reads what is ready.
package orcagrpc
