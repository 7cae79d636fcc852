package loadgrpc_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/slotgate/slotgate/load/loadgrpc"
	"github.com/slotgate/slotgate/load/report"
	loadv1 "github.com/slotgate/slotgate/protos/slotgate/load/v1"
)

// randSnapshot returns a snapshot with every field drawn at random,
// edge values included. Unknown counts are the zero Field, as report
// makes them.
func randSnapshot(r *rand.Rand) report.Snapshot {
	s := report.Snapshot{
		Seq:   pick(r, 0, 1, math.MaxUint64, r.Uint64()),
		At:    randTime(r),
		Epoch: pick(r, 0, 1, math.MaxUint64, r.Uint64()),
		TTL:   pick(r, 0, time.Nanosecond, 3*time.Second, time.Duration(math.MaxInt64), time.Duration(r.Int64N(1<<62))),
		Busy:  r.IntN(2) == 0,
		Stale: r.IntN(2) == 0,
		Engine: report.Engine{
			Dialect:       pick(r, "", "vllm", "sglang", "trtllm", "none", randString(r)),
			FailedScrapes: randInt(r),
			Error:         pick(r, "", randString(r)),
		},
		Requests: report.Requests{
			InFlight: randInt(r), Queued: randInt(r), Limit: randInt(r), QueueLimit: randInt(r),
			WaitingLimit: randInt(r), Prefilling: randInt(r),
			PrefillTokens: randInt64(r), QueuedTokens: randInt64(r),
			PrefillTokenLimit: randInt64(r), QueueTokenLimit: randInt64(r),
		},
		Thresholds: report.Thresholds{
			ActiveDecodeBlocks:      pick(r, nil, ptr(0.0), ptr(1.0), ptr(r.Float64()), ptr(math.Inf(1))),
			ActivePrefillTokens:     pick(r, nil, ptr[uint64](0), ptr[uint64](math.MaxUint64), ptr(r.Uint64())),
			ActivePrefillTokensFrac: pick(r, nil, ptr(0.0), ptr(math.Copysign(0, -1)), ptr(r.Float64()*4), ptr(math.MaxFloat64)),
		},
		Ranks: make([]report.Rank, r.IntN(5)),
	}
	if r.IntN(4) > 0 {
		s.Engine.ScrapedAt = randTime(r)
	}
	if n := r.IntN(5); n > 0 { // with limits per rank; nil without, as report makes it
		s.Requests.Ranks = make([]report.RankRequests, n)
		for i := range s.Requests.Ranks {
			s.Requests.Ranks[i] = report.RankRequests{
				DPRank: pick(r, i, randInt(r)), InFlight: randInt(r), Queued: randInt(r), Limit: randInt(r),
				QueueLimit: randInt(r), WaitingLimit: randInt(r), Prefilling: randInt(r),
				PrefillTokens: randInt64(r), QueuedTokens: randInt64(r),
				PrefillTokenLimit: randInt64(r), QueueTokenLimit: randInt64(r),
			}
		}
	}
	for i := range s.Ranks {
		s.Ranks[i] = report.Rank{
			DPRank: pick(r, i, randInt(r)), Busy: r.IntN(2) == 0,
			KVTotalBlocks: randField(r), KVUsedBlocks: randField(r), ActiveDecodeBlocks: randField(r),
			ActivePrefillTokens: randField(r), MaxNumBatchedTokens: randField(r),
			NumRequestsRunning: randField(r), NumRequestsWaiting: randField(r), BlockSize: randField(r),
		}
	}
	return s
}

func pick[T any](r *rand.Rand, vs ...T) T { return vs[r.IntN(len(vs))] }

func randInt(r *rand.Rand) int {
	return pick(r, 0, 1, math.MaxInt, math.MinInt, r.IntN(1000), int(r.Int64()))
}

func randInt64(r *rand.Rand) int64 {
	return pick(r, 0, 1, math.MaxInt64, math.MinInt64, r.Int64N(1<<20), r.Int64())
}

func randField(r *rand.Rand) report.Field {
	if r.IntN(3) == 0 {
		return report.Field{}
	}
	return report.Field{
		N:      pick(r, 0, 1, math.MaxInt64, r.Int64N(1<<20), r.Int64()),
		Source: pick(r, report.SourceEngine, report.SourceStatic, report.SourceSlotgate),
	}
}

var zones = []*time.Location{time.UTC, time.Local, time.FixedZone("X", -7*3600-1800)}

// randTime returns a zero time (in some zone), the current time with its
// monotonic reading, or any instant from year 1 to 9999, in some zone.
func randTime(r *rand.Rand) time.Time {
	switch r.IntN(6) {
	case 0:
		return time.Time{}.In(pick(r, zones...))
	case 1:
		return time.Now()
	}
	lo, hi := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
	return time.Unix(lo+r.Int64N(hi-lo), r.Int64N(1e9)).In(pick(r, zones...))
}

// randString is printable, Unicode, or broken UTF-8.
func randString(r *rand.Rand) string {
	return pick(r, "dial tcp 127.0.0.1:8000: connect: connection refused", "ünïcödé ✓ 模型",
		"bad \xff\xfe bytes", string([]byte{byte(r.IntN(256)), byte(r.IntN(256))}))
}

// wire is what a client reads: s converted, marshalled, unmarshalled and
// converted back.
func wire(t *testing.T, s *report.Snapshot) report.Snapshot {
	t.Helper()
	b, err := proto.Marshal(loadgrpc.ToProto(s))
	if err != nil {
		t.Fatalf("proto.Marshal(ToProto(%+v)): %v", s, err)
	}
	var l loadv1.Load
	if err := proto.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	return loadgrpc.FromProto(&l)
}

// onWire is s as it comes back from the wire by design: strings made
// valid UTF-8. (Times come back in UTC; sameSnapshot compares instants.)
func onWire(s report.Snapshot) report.Snapshot {
	s.Engine.Dialect = strings.ToValidUTF8(s.Engine.Dialect, "\uFFFD")
	s.Engine.Error = strings.ToValidUTF8(s.Engine.Error, "\uFFFD")
	return s
}

func TestRoundTrip(t *testing.T) {
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 1))
		s := randSnapshot(r)
		got, want := wire(t, &s), onWire(s)
		if !sameSnapshot(&got, &want) {
			t.Fatalf("seed %d: round trip of\n%+v\ngave\n%+v", seed, s, got)
		}
		for _, tm := range []time.Time{got.At, got.Engine.ScrapedAt} {
			if !tm.IsZero() && tm.Location() != time.UTC {
				t.Fatalf("seed %d: time %v read back in %v, want UTC", seed, tm, tm.Location())
			}
		}
	}
}

// TestToProtoUnknownIsUnset checks that unknown is absent on the wire and
// that a known 0 is present: the two must never be confused.
func TestToProtoUnknownIsUnset(t *testing.T) {
	unknown := report.Snapshot{Seq: 1, Ranks: []report.Rank{{}}}
	zero := report.Field{N: 0, Source: report.SourceEngine}
	known := report.Snapshot{
		Seq: 1, At: time.Unix(0, 0), Engine: report.Engine{ScrapedAt: time.Unix(0, 0)},
		Thresholds: report.Thresholds{ActiveDecodeBlocks: ptr(0.0), ActivePrefillTokens: ptr[uint64](0), ActivePrefillTokensFrac: ptr(0.0)},
		Ranks:      []report.Rank{{KVTotalBlocks: zero, KVUsedBlocks: zero, ActiveDecodeBlocks: zero, ActivePrefillTokens: zero, MaxNumBatchedTokens: zero, NumRequestsRunning: zero, NumRequestsWaiting: zero, BlockSize: zero}},
	}
	for _, tt := range []struct {
		name string
		s    report.Snapshot
		set  bool
	}{
		{"unknown", unknown, false},
		{"known zero", known, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := proto.Marshal(loadgrpc.ToProto(&tt.s))
			if err != nil {
				t.Fatal(err)
			}
			var l loadv1.Load
			if err := proto.Unmarshal(b, &l); err != nil {
				t.Fatal(err)
			}
			optional := []struct {
				msg  protoreflect.Message
				name protoreflect.Name
			}{
				{l.ProtoReflect(), "at"},
				{l.GetEngine().ProtoReflect(), "scraped_at"},
				{l.GetThresholds().ProtoReflect(), "active_decode_blocks"},
				{l.GetThresholds().ProtoReflect(), "active_prefill_tokens"},
				{l.GetThresholds().ProtoReflect(), "active_prefill_tokens_frac"},
			}
			rank := l.GetRanks()[0].ProtoReflect()
			counts := 0
			for i := range rank.Descriptor().Fields().Len() {
				if fd := rank.Descriptor().Fields().Get(i); fd.Message() != nil {
					optional = append(optional, struct {
						msg  protoreflect.Message
						name protoreflect.Name
					}{rank, fd.Name()})
					counts++
				}
			}
			if counts != 8 {
				t.Fatalf("Rank has %d Count fields, want 8", counts)
			}
			for _, o := range optional {
				fd := o.msg.Descriptor().Fields().ByName(o.name)
				if fd == nil {
					t.Fatalf("%s has no field %s", o.msg.Descriptor().FullName(), o.name)
				}
				if got := o.msg.Has(fd); got != tt.set {
					t.Errorf("%s present = %v, want %v", fd.FullName(), got, tt.set)
				}
			}
		})
	}
}

// TestToProtoMatchesJSON checks the gRPC form against report's JSON form,
// which is written independently: same names, same values, same sources.
// A round trip alone would miss two fields swapped both ways.
func TestToProtoMatchesJSON(t *testing.T) {
	for seed := range uint64(300) {
		s := randSnapshot(rand.New(rand.NewPCG(seed, 2)))
		s.Engine.Dialect, s.Engine.Error = "vllm", "boom" // JSON and proto agree on valid UTF-8 only
		if s.At.IsZero() {
			s.At = time.Now() // JSON writes a zero At, the wire leaves it unset; the Hub always sets it
		}
		s.TTL = s.TTL.Truncate(time.Millisecond) // JSON has whole milliseconds
		if p := s.Thresholds.ActiveDecodeBlocks; p != nil && math.IsInf(*p, 0) {
			s.Thresholds.ActiveDecodeBlocks = ptr(0.5) // JSON has no infinity
		}
		var js map[string]any
		b, err := json.Marshal(&s)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.UseNumber()
		if err := dec.Decode(&js); err != nil {
			t.Fatal(err)
		}
		l := loadgrpc.ToProto(&s)
		check := func(path string, m protoreflect.Message, name string, want any) {
			t.Helper()
			fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
			if fd == nil {
				t.Fatalf("seed %d: %s: no proto field %s in %s", seed, path, name, m.Descriptor().FullName())
			}
			if got := protoValue(m, fd); got != jsonValue(want) {
				t.Errorf("seed %d: %s: proto %s = %q, JSON %q", seed, path, fd.FullName(), got, jsonValue(want))
			}
		}
		for k, v := range js {
			switch k {
			case "engine", "requests", "thresholds":
				sub := l.ProtoReflect().Get(l.ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name(k))).Message()
				for k2, v2 := range v.(map[string]any) {
					if k == "requests" && k2 == "ranks" {
						checkRankRequests(t, seed, l.GetRequests().GetRanks(), v2.([]any))
						continue
					}
					name := k2
					if k == "thresholds" {
						name = strings.Replace(k2, "_threshold", "", 1)
					}
					check(k+"."+k2, sub, name, v2)
				}
				if k == "requests" {
					if _, ok := v.(map[string]any)["ranks"]; !ok && len(l.GetRequests().GetRanks()) != 0 {
						t.Errorf("seed %d: proto has %d requests.ranks, JSON none", seed, len(l.GetRequests().GetRanks()))
					}
				}
			case "ranks":
				for i, rv := range v.([]any) {
					rj := rv.(map[string]any)
					sources, _ := rj["sources"].(map[string]any)
					rank := l.GetRanks()[i].ProtoReflect()
					for k2, v2 := range rj {
						if k2 == "sources" {
							continue
						}
						if v2 != nil && rank.Descriptor().Fields().ByName(protoreflect.Name(k2)).Message() != nil {
							v2 = v2.(json.Number).String() + "/" + strings.ToUpper(sources[k2].(string))
						}
						check("ranks."+k2, rank, k2, v2)
					}
				}
			case "ttl_ms": // the one field whose JSON name carries its unit
				if got := jsonNum(l.GetTtl().AsDuration().Milliseconds()); got != jsonValue(v) {
					t.Errorf("seed %d: ttl_ms: proto ttl %v, JSON %v", seed, l.GetTtl().AsDuration(), v)
				}
			default:
				check(k, l.ProtoReflect(), k, v)
			}
		}
	}
}

// checkRankRequests checks each rank's admission state in the gRPC form
// against the JSON form's, field by field, by name.
func checkRankRequests(t *testing.T, seed uint64, got []*loadv1.RankRequests, want []any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("seed %d: proto has %d requests.ranks, JSON %d", seed, len(got), len(want))
	}
	for i, rv := range want {
		m := got[i].ProtoReflect()
		rj := rv.(map[string]any)
		if n := m.Descriptor().Fields().Len(); len(rj) != n {
			t.Errorf("seed %d: requests.ranks[%d] has %d JSON fields, the proto %d", seed, i, len(rj), n)
		}
		for k, v := range rj {
			fd := m.Descriptor().Fields().ByName(protoreflect.Name(k))
			if fd == nil {
				t.Fatalf("seed %d: requests.ranks.%s: no proto field in %s", seed, k, m.Descriptor().FullName())
			}
			if got := protoValue(m, fd); got != jsonValue(v) {
				t.Errorf("seed %d: requests.ranks[%d].%s: proto %q, JSON %q", seed, i, k, got, jsonValue(v))
			}
		}
	}
}

// protoValue renders a field as a string comparable with jsonValue: unset
// is "null", a Count is "value/SOURCE", a Timestamp is RFC 3339.
func protoValue(m protoreflect.Message, fd protoreflect.FieldDescriptor) string {
	if fd.HasPresence() && !m.Has(fd) {
		return "null"
	}
	switch v := m.Get(fd).Interface().(type) {
	case protoreflect.Message:
		switch x := v.Interface().(type) {
		case *loadv1.Count:
			return jsonValue(json.Number(jsonNum(x.GetValue()))) + "/" + strings.TrimPrefix(x.GetSource().String(), "SOURCE_")
		case interface{ AsTime() time.Time }:
			return x.AsTime().Format(time.RFC3339Nano)
		}
		return "message " + string(fd.Message().FullName())
	case float64:
		b, _ := json.Marshal(v)
		return string(b)
	default:
		b, _ := json.Marshal(v)
		return strings.Trim(string(b), `"`)
	}
}

func jsonNum(n int64) string { b, _ := json.Marshal(n); return string(b) }

func jsonValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return t.Format(time.RFC3339Nano)
		}
		return x
	case json.Number:
		return x.String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestFromProtoSources(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   *loadv1.Count
		want report.Field
	}{
		{"unset is unknown", nil, report.Field{}},
		{"engine", &loadv1.Count{Value: 7, Source: loadv1.Source_SOURCE_ENGINE}, report.Field{N: 7, Source: report.SourceEngine}},
		{"static", &loadv1.Count{Value: 7, Source: loadv1.Source_SOURCE_STATIC}, report.Field{N: 7, Source: report.SourceStatic}},
		{"slotgate", &loadv1.Count{Value: 7, Source: loadv1.Source_SOURCE_SLOTGATE}, report.Field{N: 7, Source: report.SourceSlotgate}},
		{"unspecified is engine", &loadv1.Count{Value: 7}, report.Field{N: 7, Source: report.SourceEngine}},
		{"a newer source is engine", &loadv1.Count{Value: 7, Source: 99}, report.Field{N: 7, Source: report.SourceEngine}},
		{"known zero", &loadv1.Count{Source: loadv1.Source_SOURCE_SLOTGATE}, report.Field{Source: report.SourceSlotgate}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := loadgrpc.FromProto(&loadv1.Load{Ranks: []*loadv1.Rank{{KvUsedBlocks: tt.in}}})
			if len(got.Ranks) != 1 || got.Ranks[0].KVUsedBlocks != tt.want {
				t.Errorf("FromProto(kv_used_blocks %v).Ranks = %+v, want KVUsedBlocks %+v", tt.in, got.Ranks, tt.want)
			}
		})
	}
}

func TestNil(t *testing.T) {
	if l := loadgrpc.ToProto(nil); l != nil {
		t.Errorf("ToProto(nil) = %v, want nil", l)
	}
	got := loadgrpc.FromProto(nil)
	if want := (report.Snapshot{}); !sameSnapshot(&got, &want) || len(got.Ranks) != 0 || got.Requests.Ranks != nil {
		t.Errorf("FromProto(nil) = %+v, want the zero Snapshot", got)
	}
}

// TestRequestsRanksOnlyPerRank: with limits for the whole engine there
// are no rank entries on the wire, and none read back (nil, as report
// makes it); with limits per rank each rank's comes back whole.
func TestRequestsRanksOnlyPerRank(t *testing.T) {
	engine := report.Snapshot{Requests: report.Requests{InFlight: 3, Limit: 8, WaitingLimit: 2, Prefilling: 2}}
	l := loadgrpc.ToProto(&engine)
	if n := len(l.GetRequests().GetRanks()); n != 0 {
		t.Errorf("engine-wide limits: %d requests.ranks on the wire, want none", n)
	}
	if got := wire(t, &engine); got.Requests.Ranks != nil || !sameRequests(&got.Requests, &engine.Requests) {
		t.Errorf("engine-wide limits read back as %+v, want %+v", got.Requests, engine.Requests)
	}

	perRank := report.Snapshot{Requests: report.Requests{
		InFlight: 3, Queued: 1, Limit: 8, QueueLimit: 4, WaitingLimit: 4, Prefilling: 3,
		Ranks: []report.RankRequests{
			{DPRank: 0, InFlight: 2, Queued: 1, Limit: 4, QueueLimit: 2, WaitingLimit: 2, Prefilling: 2},
			{DPRank: 1, InFlight: 1, Queued: 0, Limit: 4, QueueLimit: 2, WaitingLimit: 2, Prefilling: 1},
		},
	}}
	l = loadgrpc.ToProto(&perRank)
	want := &loadv1.RankRequests{DpRank: 0, InFlight: 2, Queued: 1, Limit: 4, QueueLimit: 2, WaitingLimit: 2, Prefilling: 2}
	if rs := l.GetRequests().GetRanks(); len(rs) != 2 || !proto.Equal(rs[0], want) || rs[1].GetDpRank() != 1 ||
		rs[1].GetPrefilling() != 1 {
		t.Errorf("per-rank limits: requests.ranks = %v, want rank 0 %v, then rank 1", rs, want)
	}
	if got := wire(t, &perRank); !sameRequests(&got.Requests, &perRank.Requests) {
		t.Errorf("per-rank limits read back as %+v, want %+v", got.Requests, perRank.Requests)
	}
	// A newer sidecar's ranks read by this version, through the wire: the
	// fields it knows.
	b, err := proto.Marshal(&loadv1.Load{Requests: &loadv1.Requests{Ranks: []*loadv1.RankRequests{{DpRank: 5, Prefilling: 7}}}})
	if err != nil {
		t.Fatal(err)
	}
	var back loadv1.Load
	if err := proto.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := loadgrpc.FromProto(&back).Requests.Ranks; len(got) != 1 || got[0] != (report.RankRequests{DPRank: 5, Prefilling: 7}) {
		t.Errorf("FromProto read ranks %+v, want rank 5 with 7 in prefill", got)
	}
}

// TestInvalidUTF8 is the regression for a scrape error quoting raw bytes:
// proto3 refuses to marshal a string that is not UTF-8, which would end
// every WatchLoad stream at each such snapshot.
func TestInvalidUTF8(t *testing.T) {
	s := report.Snapshot{Engine: report.Engine{Dialect: "v\xffllm", Error: "parse: unexpected \xff\xfe in body"}}
	got := wire(t, &s)
	if want := "parse: unexpected \uFFFD in body"; got.Engine.Error != want {
		t.Errorf("Error read back as %q, want %q", got.Engine.Error, want)
	}
	if want := "v\uFFFDllm"; got.Engine.Dialect != want {
		t.Errorf("Dialect read back as %q, want %q", got.Engine.Dialect, want)
	}
}

// TestNoAliasing: a published Snapshot is immutable and shared, so a
// message built from it, or a Snapshot read from a message, must share no
// memory with it.
func TestNoAliasing(t *testing.T) {
	s := report.Snapshot{Thresholds: report.Thresholds{
		ActiveDecodeBlocks: ptr(0.5), ActivePrefillTokens: ptr[uint64](5), ActivePrefillTokensFrac: ptr(0.5),
	}}
	l := loadgrpc.ToProto(&s)
	*l.Thresholds.ActiveDecodeBlocks, *l.Thresholds.ActivePrefillTokens, *l.Thresholds.ActivePrefillTokensFrac = 9, 9, 9
	if *s.Thresholds.ActiveDecodeBlocks != 0.5 || *s.Thresholds.ActivePrefillTokens != 5 || *s.Thresholds.ActivePrefillTokensFrac != 0.5 {
		t.Errorf("changing ToProto's message changed the Snapshot's thresholds: %+v", s.Thresholds)
	}
	back := loadgrpc.FromProto(l)
	*back.Thresholds.ActiveDecodeBlocks, *back.Thresholds.ActivePrefillTokens, *back.Thresholds.ActivePrefillTokensFrac = 1, 1, 1
	if l.GetThresholds().GetActiveDecodeBlocks() != 9 || l.GetThresholds().GetActivePrefillTokens() != 9 || l.GetThresholds().GetActivePrefillTokensFrac() != 9 {
		t.Errorf("changing FromProto's Snapshot changed the message's thresholds: %v", l.GetThresholds())
	}
	// The admission state of each rank, too.
	ranked := report.Snapshot{Requests: report.Requests{Ranks: []report.RankRequests{{DPRank: 0, Prefilling: 1}}}}
	lr := loadgrpc.ToProto(&ranked)
	lr.Requests.Ranks[0].Prefilling = 9
	if ranked.Requests.Ranks[0].Prefilling != 1 {
		t.Errorf("changing ToProto's message changed the Snapshot's requests ranks: %+v", ranked.Requests.Ranks)
	}
	backRanked := loadgrpc.FromProto(lr)
	backRanked.Requests.Ranks[0].Prefilling = 2
	if lr.GetRequests().GetRanks()[0].GetPrefilling() != 9 {
		t.Errorf("changing FromProto's Snapshot changed the message's requests ranks: %v", lr.GetRequests())
	}
}
