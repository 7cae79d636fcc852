package report

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// The JSON form of a Snapshot, served by GET /v1/load and streamed as
// Server-Sent Events. Counts are plain numbers, null when unknown, and
// each rank's "sources" names where every known count came from, so a
// consumer that only wants numbers reads them directly. "requests" has
// "ranks", each rank's admission state, only with limits per rank; the
// fields of its ranks are in the order of RankRequests, which they
// convert to and from. A field a sidecar from before it leaves out reads
// as 0.
//
// "epoch" is a string of decimal digits, as protobuf's JSON mapping
// writes 64-bit integers: a JavaScript number would round it. "ttl_ms" is
// the TTL in whole milliseconds.
//
//	{"seq":7,"at":"2026-12-02T21:00:00.123Z","epoch":"9181726354437281923","ttl_ms":3000,
//	 "busy":false,"stale":false,
//	 "engine":{"dialect":"vllm","scraped_at":"…","failed_scrapes":0},
//	 "requests":{"in_flight":3,"queued":0,"limit":8,"queue_limit":16,"waiting_limit":4,"prefilling":1,
//	   "prefill_tokens":1800,"queued_tokens":0,"prefill_token_limit":8192,"queue_token_limit":65536,
//	   "ranks":[{"dp_rank":0,"in_flight":2,"queued":0,"limit":4,"queue_limit":8,"waiting_limit":2,"prefilling":1,
//	     "prefill_tokens":1800,"queued_tokens":0,"prefill_token_limit":4096,"queue_token_limit":32768},…]},
//	 "thresholds":{"active_decode_blocks_threshold":0.85,
//	   "active_prefill_tokens_threshold":null,"active_prefill_tokens_threshold_frac":null},
//	 "ranks":[{"dp_rank":0,"busy":false,"kv_total_blocks":4096,"kv_used_blocks":512,…,
//	   "sources":{"kv_total_blocks":"engine","kv_used_blocks":"engine",…}}]}
type (
	snapshotJSON struct {
		Seq        uint64         `json:"seq"`
		At         time.Time      `json:"at"`
		Epoch      uint64         `json:"epoch,string"`
		TTLMillis  int64          `json:"ttl_ms"`
		Busy       bool           `json:"busy"`
		Stale      bool           `json:"stale"`
		Engine     engineJSON     `json:"engine"`
		Requests   requestsJSON   `json:"requests"`
		Thresholds thresholdsJSON `json:"thresholds"`
		Ranks      []rankJSON     `json:"ranks"`
	}
	engineJSON struct {
		Dialect       string     `json:"dialect"`
		ScrapedAt     *time.Time `json:"scraped_at"`
		FailedScrapes int        `json:"failed_scrapes"`
		Error         string     `json:"error,omitempty"`
	}
	requestsJSON struct {
		InFlight          int                `json:"in_flight"`
		Queued            int                `json:"queued"`
		Limit             int                `json:"limit"`
		QueueLimit        int                `json:"queue_limit"`
		WaitingLimit      int                `json:"waiting_limit"`
		Prefilling        int                `json:"prefilling"`
		PrefillTokens     int64              `json:"prefill_tokens"`
		QueuedTokens      int64              `json:"queued_tokens"`
		PrefillTokenLimit int64              `json:"prefill_token_limit"`
		QueueTokenLimit   int64              `json:"queue_token_limit"`
		Ranks             []rankRequestsJSON `json:"ranks,omitempty"`
	}
	rankRequestsJSON struct {
		DPRank            int   `json:"dp_rank"`
		InFlight          int   `json:"in_flight"`
		Queued            int   `json:"queued"`
		Limit             int   `json:"limit"`
		QueueLimit        int   `json:"queue_limit"`
		WaitingLimit      int   `json:"waiting_limit"`
		Prefilling        int   `json:"prefilling"`
		PrefillTokens     int64 `json:"prefill_tokens"`
		QueuedTokens      int64 `json:"queued_tokens"`
		PrefillTokenLimit int64 `json:"prefill_token_limit"`
		QueueTokenLimit   int64 `json:"queue_token_limit"`
	}
	thresholdsJSON struct {
		ActiveDecodeBlocks      *float64 `json:"active_decode_blocks_threshold"`
		ActivePrefillTokens     *uint64  `json:"active_prefill_tokens_threshold"`
		ActivePrefillTokensFrac *float64 `json:"active_prefill_tokens_threshold_frac"`
	}
	rankJSON struct {
		DPRank              int               `json:"dp_rank"`
		Busy                bool              `json:"busy"`
		KVTotalBlocks       *int64            `json:"kv_total_blocks"`
		KVUsedBlocks        *int64            `json:"kv_used_blocks"`
		ActiveDecodeBlocks  *int64            `json:"active_decode_blocks"`
		ActivePrefillTokens *int64            `json:"active_prefill_tokens"`
		MaxNumBatchedTokens *int64            `json:"max_num_batched_tokens"`
		NumRequestsRunning  *int64            `json:"num_requests_running"`
		NumRequestsWaiting  *int64            `json:"num_requests_waiting"`
		BlockSize           *int64            `json:"block_size"`
		Sources             map[string]Source `json:"sources"`
	}
)

// MarshalJSON writes the wire form described above.
func (s *Snapshot) MarshalJSON() ([]byte, error) {
	out := snapshotJSON{
		Seq: s.Seq, At: s.At.UTC(), Epoch: s.Epoch, TTLMillis: s.TTL.Milliseconds(), Busy: s.Busy, Stale: s.Stale,
		Engine: engineJSON{
			Dialect: s.Engine.Dialect, FailedScrapes: s.Engine.FailedScrapes, Error: s.Engine.Error,
		},
		Requests:   requestsToJSON(&s.Requests),
		Thresholds: thresholdsJSON(s.Thresholds),
		Ranks:      make([]rankJSON, len(s.Ranks)),
	}
	if !s.Engine.ScrapedAt.IsZero() {
		t := s.Engine.ScrapedAt.UTC()
		out.Engine.ScrapedAt = &t
	}
	for i := range s.Ranks {
		out.Ranks[i] = rankToJSON(&s.Ranks[i])
	}
	return json.Marshal(out)
}

// requestsToJSON copies r; its Ranks is nil when r has none, so that
// "ranks" is left out.
func requestsToJSON(r *Requests) requestsJSON {
	out := requestsJSON{
		InFlight: r.InFlight, Queued: r.Queued, Limit: r.Limit, QueueLimit: r.QueueLimit,
		WaitingLimit: r.WaitingLimit, Prefilling: r.Prefilling,
		PrefillTokens: r.PrefillTokens, QueuedTokens: r.QueuedTokens,
		PrefillTokenLimit: r.PrefillTokenLimit, QueueTokenLimit: r.QueueTokenLimit,
	}
	if len(r.Ranks) > 0 {
		out.Ranks = make([]rankRequestsJSON, len(r.Ranks))
		for i, rr := range r.Ranks {
			out.Ranks[i] = rankRequestsJSON(rr)
		}
	}
	return out
}

func rankToJSON(r *Rank) rankJSON {
	out := rankJSON{DPRank: r.DPRank, Busy: r.Busy, Sources: make(map[string]Source, 8)}
	ptrs := out.values()
	for i, nf := range r.fields() {
		if nf.f.Known() {
			n := nf.f.N
			*ptrs[i] = &n
			out.Sources[nf.name] = nf.f.Source
		}
	}
	return out
}

// values lists the count fields in the order of Rank.fields.
func (r *rankJSON) values() [8]**int64 {
	return [8]**int64{
		&r.KVTotalBlocks, &r.KVUsedBlocks, &r.ActiveDecodeBlocks, &r.ActivePrefillTokens,
		&r.MaxNumBatchedTokens, &r.NumRequestsRunning, &r.NumRequestsWaiting, &r.BlockSize,
	}
}

// UnmarshalJSON reads the wire form, for consumers such as package watch.
// A count without a source, or with one not known to this version, is
// taken as coming from the engine.
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	var in snapshotJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("load snapshot: %w", err)
	}
	ttl, err := ttlFromMillis(in.TTLMillis)
	if err != nil {
		return err
	}
	*s = Snapshot{
		Seq: in.Seq, At: in.At, Epoch: in.Epoch, TTL: ttl, Busy: in.Busy, Stale: in.Stale,
		Engine:     Engine{Dialect: in.Engine.Dialect, FailedScrapes: in.Engine.FailedScrapes, Error: in.Engine.Error},
		Requests:   requestsFromJSON(&in.Requests),
		Thresholds: Thresholds(in.Thresholds),
		Ranks:      make([]Rank, len(in.Ranks)),
	}
	if in.Engine.ScrapedAt != nil {
		s.Engine.ScrapedAt = *in.Engine.ScrapedAt
	}
	for i := range in.Ranks {
		s.Ranks[i] = rankFromJSON(&in.Ranks[i])
	}
	return nil
}

// maxTTLMillis is the longest TTL a time.Duration holds, in milliseconds.
const maxTTLMillis = math.MaxInt64 / int64(time.Millisecond)

// ttlFromMillis reads "ttl_ms": a TTL that is negative, or too long for a
// time.Duration, is an error rather than a wrapped-around duration.
func ttlFromMillis(ms int64) (time.Duration, error) {
	if ms < 0 || ms > maxTTLMillis {
		return 0, fmt.Errorf("load snapshot: ttl_ms %d is not between 0 and %d", ms, maxTTLMillis)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// requestsFromJSON copies in; Ranks is nil when there are none.
func requestsFromJSON(in *requestsJSON) Requests {
	r := Requests{
		InFlight: in.InFlight, Queued: in.Queued, Limit: in.Limit, QueueLimit: in.QueueLimit,
		WaitingLimit: in.WaitingLimit, Prefilling: in.Prefilling,
		PrefillTokens: in.PrefillTokens, QueuedTokens: in.QueuedTokens,
		PrefillTokenLimit: in.PrefillTokenLimit, QueueTokenLimit: in.QueueTokenLimit,
	}
	if len(in.Ranks) > 0 {
		r.Ranks = make([]RankRequests, len(in.Ranks))
		for i, rr := range in.Ranks {
			r.Ranks[i] = RankRequests(rr)
		}
	}
	return r
}

func rankFromJSON(in *rankJSON) Rank {
	r := Rank{DPRank: in.DPRank, Busy: in.Busy}
	ptrs := in.values()
	for i, nf := range r.fields() {
		p := *ptrs[i]
		if p == nil {
			continue
		}
		src := in.Sources[nf.name]
		switch src {
		case SourceEngine, SourceStatic, SourceSlotgate:
		default:
			src = SourceEngine
		}
		*nf.f = Field{N: *p, Source: src}
	}
	return r
}
