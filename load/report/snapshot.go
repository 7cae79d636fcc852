package report

import (
	"encoding/json"
	"slices"
	"time"
)

// Source says where a Field's value came from.
type Source string

// The sources of a Field. The empty Source means the value is unknown.
const (
	// SourceUnknown: nobody reported the value.
	SourceUnknown Source = ""
	// SourceEngine: scraped from the engine's metrics.
	SourceEngine Source = "engine"
	// SourceStatic: a static override from slotgate's configuration.
	SourceStatic Source = "static"
	// SourceSlotgate: slotgate's own view of the requests it forwards.
	SourceSlotgate Source = "slotgate"
)

// Field is an optional non-negative count and where it came from. The
// zero Field is unknown, which is never the same as 0.
type Field struct {
	N      int64
	Source Source
}

// Known reports whether f holds a value.
func (f Field) Known() bool { return f.Source != SourceUnknown }

// Snapshot is one published view of the worker's load. Snapshots are
// immutable once published: readers share them and must not modify them.
type Snapshot struct {
	// Seq increases by one with every published snapshot, heartbeats
	// included; it starts at 1.
	Seq uint64
	// At is when the snapshot was computed.
	At time.Time
	// Epoch identifies the slotgate process that published the snapshot: a
	// random non-zero 64-bit boot id, drawn once when its Hub is made and
	// the same in every snapshot it publishes. A reader that sees it change
	// knows the worker restarted (its Seq starts again at 1) and drops what
	// it knew of it, in-flight counts included. 0 means a sidecar from
	// before epochs.
	Epoch uint64
	// TTL is how long a reader may trust the snapshot without a newer one:
	// after At+TTL with nothing newer, the worker is to be taken as gone,
	// not idle. The Hub sets it, by default to three heartbeats, so one or
	// two lost heartbeats are no alarm. 0 means a sidecar from before TTLs.
	TTL time.Duration
	// Busy is the worker's busy state: every rank busy under the current
	// thresholds (false when no threshold is set).
	Busy bool
	// Stale reports that the engine's metrics stopped answering: its
	// fields are those of Engine.ScrapedAt. slotgate's own keep flowing.
	Stale bool
	// Engine says how the engine's metrics are read.
	Engine Engine
	// Requests is slotgate's own admission state.
	Requests Requests
	// Thresholds are the busy thresholds in force; nil means off.
	Thresholds Thresholds
	// Ranks are the data-parallel ranks, sorted by DPRank; at least one.
	Ranks []Rank
}

// Engine describes the engine metrics source.
type Engine struct {
	// Dialect is vllm, sglang, trtllm or none; empty while auto detection
	// has not recognised the engine.
	Dialect string
	// ScrapedAt is the last successful scrape; zero when there was none.
	ScrapedAt time.Time
	// FailedScrapes counts consecutive failed scrapes.
	FailedScrapes int
	// Error is the last scrape's error while FailedScrapes > 0.
	Error string
}

// Requests is slotgate's admission state, from its limiters. With limits
// per data-parallel rank (--per-rank-limits) each rank has a limiter of
// its own: the counts and limits here are then the sums over the ranks,
// and Ranks has each rank's.
type Requests struct {
	// InFlight is the requests holding an engine slot: admitted and not
	// yet finished. Queued is those waiting in slotgate's queue.
	InFlight, Queued int
	// Limit is N, the engine slots, and QueueLimit is Q; both 0 when
	// slotgate runs without a cap.
	Limit, QueueLimit int
	// WaitingLimit is W, Dynamo's engine request waiting limit: at most W
	// requests in flight may be in prefill at once. 0 when it is not set.
	WaitingLimit int
	// Prefilling is the requests in flight that have not had their first
	// generated token yet, those in prefill: at most InFlight, and at most
	// WaitingLimit but just after W was lowered (which takes no place
	// back).
	Prefilling int
	// PrefillTokens is the prompt tokens of the Prefilling requests, and
	// QueuedTokens those of the Queued ones. slotgate counts an HTTP
	// request's tokens only while a token limit is in force, so both stay
	// 0 without one.
	PrefillTokens, QueuedTokens int64
	// PrefillTokenLimit is P (--engine-prefill-token-limit), and
	// QueueTokenLimit the queue's bound in tokens
	// (--request-queue-token-limit); both 0 when not set.
	PrefillTokenLimit, QueueTokenLimit int64
	// Ranks is each data-parallel rank's admission state, one entry per
	// rank sorted by DPRank, when each rank has limits of its own; nil
	// when the limits are for the whole engine.
	Ranks []RankRequests
}

// RankRequests is one data-parallel rank's admission state, under the
// limits of its own limiter. The fields mean what Requests' do, for the
// requests admitted to, or waiting for, this rank.
type RankRequests struct {
	// DPRank is the data-parallel rank, from 0.
	DPRank int
	// InFlight is the rank's requests holding one of its slots; Queued,
	// those waiting in its queue.
	InFlight, Queued int
	// Limit is the rank's N and QueueLimit its Q; both 0 when slotgate
	// runs without a cap.
	Limit, QueueLimit int
	// WaitingLimit is the rank's W; 0 when it is not set.
	WaitingLimit int
	// Prefilling is the rank's requests in flight before their first
	// generated token.
	Prefilling int
	// PrefillTokens and QueuedTokens are the prompt tokens of the rank's
	// Prefilling and Queued requests (0 without a token limit).
	PrefillTokens, QueuedTokens int64
	// PrefillTokenLimit is the rank's P and QueueTokenLimit its queue's
	// bound in tokens; both 0 when not set.
	PrefillTokenLimit, QueueTokenLimit int64
}

// equal reports whether r and o are the same admission state, rank by
// rank. A nil Ranks and an empty one are the same.
func (r *Requests) equal(o *Requests) bool {
	return r.InFlight == o.InFlight && r.Queued == o.Queued && r.Limit == o.Limit && r.QueueLimit == o.QueueLimit &&
		r.WaitingLimit == o.WaitingLimit && r.Prefilling == o.Prefilling &&
		r.PrefillTokens == o.PrefillTokens && r.QueuedTokens == o.QueuedTokens &&
		r.PrefillTokenLimit == o.PrefillTokenLimit && r.QueueTokenLimit == o.QueueTokenLimit && slices.Equal(r.Ranks, o.Ranks)
}

// Thresholds are the busy thresholds, with Dynamo's meaning; a nil field
// is a check that is off.
type Thresholds struct {
	ActiveDecodeBlocks      *float64
	ActivePrefillTokens     *uint64
	ActivePrefillTokensFrac *float64
}

// Rank is the load of one data-parallel rank.
type Rank struct {
	DPRank int
	// Busy is this rank's busy state: any configured check true.
	Busy bool
	// KVTotalBlocks is the rank's KV capacity in blocks (engine or static).
	KVTotalBlocks Field
	// KVUsedBlocks is the engine's KV blocks in use (engine only: the
	// authoritative occupancy, never overwritten by an estimate).
	KVUsedBlocks Field
	// ActiveDecodeBlocks is slotgate's estimate of the blocks its requests
	// in flight hold: prompt plus generated tokens over the block size.
	ActiveDecodeBlocks Field
	// ActivePrefillTokens is the prompt tokens not yet computed: the
	// engine's when it exports them and is fresh, else slotgate's count
	// of its requests still waiting for their first token.
	ActivePrefillTokens Field
	// MaxNumBatchedTokens is the rank's token budget per step.
	MaxNumBatchedTokens Field
	// NumRequestsRunning and NumRequestsWaiting are the engine's own.
	NumRequestsRunning Field
	NumRequestsWaiting Field
	// BlockSize is the tokens per KV block.
	BlockSize Field
}

// fields lists the rank's fields with their JSON names, in output order.
func (r *Rank) fields() [8]namedField {
	return [8]namedField{
		{"kv_total_blocks", &r.KVTotalBlocks}, {"kv_used_blocks", &r.KVUsedBlocks},
		{"active_decode_blocks", &r.ActiveDecodeBlocks}, {"active_prefill_tokens", &r.ActivePrefillTokens},
		{"max_num_batched_tokens", &r.MaxNumBatchedTokens}, {"num_requests_running", &r.NumRequestsRunning},
		{"num_requests_waiting", &r.NumRequestsWaiting}, {"block_size", &r.BlockSize},
	}
}

type namedField struct {
	name string
	f    *Field
}

// SameLoad reports whether s and o describe the same load: everything is
// equal but Seq, At, Epoch and TTL (the publisher's stamps, set by the
// Hub) and the engine's scrape record (time, failures, error). A scrape
// that finds the same values, or fails without making the snapshot
// Stale, is no news; heartbeats carry its record.
func (s *Snapshot) SameLoad(o *Snapshot) bool {
	return s.Busy == o.Busy && s.Stale == o.Stale && s.Requests.equal(&o.Requests) && s.Engine.Dialect == o.Engine.Dialect &&
		s.Thresholds.equal(o.Thresholds) && slices.Equal(s.Ranks, o.Ranks)
}

func (t Thresholds) equal(o Thresholds) bool {
	return eqPtr(t.ActiveDecodeBlocks, o.ActiveDecodeBlocks) && eqPtr(t.ActivePrefillTokens, o.ActivePrefillTokens) &&
		eqPtr(t.ActivePrefillTokensFrac, o.ActivePrefillTokensFrac)
}

func eqPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// KVUsage is the worker's KV cache usage, 0..1: the engine's used blocks
// over the total, summed over the ranks where both are known, or, where
// the engine does not say, slotgate's active decode blocks. ok is false
// when no rank knows its total.
func (s *Snapshot) KVUsage() (usage float64, ok bool) {
	var used, total int64
	for i := range s.Ranks {
		r := &s.Ranks[i]
		if !r.KVTotalBlocks.Known() || r.KVTotalBlocks.N <= 0 {
			continue
		}
		switch {
		case r.KVUsedBlocks.Known() && !s.Stale:
			used += r.KVUsedBlocks.N
		case r.ActiveDecodeBlocks.Known():
			used += r.ActiveDecodeBlocks.N
		default:
			continue
		}
		total += r.KVTotalBlocks.N
	}
	if total == 0 {
		return 0, false
	}
	return min(float64(used)/float64(total), 1), true
}

// PrefillTokens sums the known active prefill tokens over the ranks.
func (s *Snapshot) PrefillTokens() int64 {
	var n int64
	for i := range s.Ranks {
		if f := s.Ranks[i].ActivePrefillTokens; f.Known() {
			n += f.N
		}
	}
	return n
}

// compile-time checks that the wire forms stay in step with the types.
var (
	_ json.Marshaler   = (*Snapshot)(nil)
	_ json.Unmarshaler = (*Snapshot)(nil)
)
