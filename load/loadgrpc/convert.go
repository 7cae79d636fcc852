package loadgrpc

import (
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/slotgate/slotgate/load/report"
	loadv1 "github.com/slotgate/slotgate/protos/slotgate/load/v1"
)

// ToProto returns the wire form of s; nil when s is nil. It never fails:
// every Snapshot has a wire form. A zero time or TTL is left unset, an unknown
// count is a nil Count, a threshold that is off is an unset optional, and
// a string that is not valid UTF-8 has its bad bytes replaced by U+FFFD.
func ToProto(s *report.Snapshot) *loadv1.Load {
	if s == nil {
		return nil
	}
	out := &loadv1.Load{
		Seq:   s.Seq,
		At:    timeToProto(s.At),
		Epoch: s.Epoch,
		Ttl:   ttlToProto(s.TTL),
		Busy:  s.Busy,
		Stale: s.Stale,
		Engine: &loadv1.Engine{
			Dialect:       validUTF8(s.Engine.Dialect),
			ScrapedAt:     timeToProto(s.Engine.ScrapedAt),
			FailedScrapes: int64(s.Engine.FailedScrapes),
			Error:         validUTF8(s.Engine.Error),
		},
		Requests: requestsToProto(&s.Requests),
		// Copies: the message must not alias the published Snapshot, which
		// an Unmarshal into it would write through.
		Thresholds: &loadv1.Thresholds{
			ActiveDecodeBlocks:      clonePtr(s.Thresholds.ActiveDecodeBlocks),
			ActivePrefillTokens:     clonePtr(s.Thresholds.ActivePrefillTokens),
			ActivePrefillTokensFrac: clonePtr(s.Thresholds.ActivePrefillTokensFrac),
		},
		Ranks: make([]*loadv1.Rank, len(s.Ranks)),
	}
	for i := range s.Ranks {
		out.Ranks[i] = rankToProto(&s.Ranks[i])
	}
	return out
}

func requestsToProto(r *report.Requests) *loadv1.Requests {
	out := &loadv1.Requests{
		InFlight:     int64(r.InFlight),
		Queued:       int64(r.Queued),
		Limit:        int64(r.Limit),
		QueueLimit:   int64(r.QueueLimit),
		WaitingLimit: int64(r.WaitingLimit),
		Prefilling:   int64(r.Prefilling),

		PrefillTokens:     r.PrefillTokens,
		QueuedTokens:      r.QueuedTokens,
		PrefillTokenLimit: r.PrefillTokenLimit,
		QueueTokenLimit:   r.QueueTokenLimit,
	}
	if len(r.Ranks) > 0 {
		out.Ranks = make([]*loadv1.RankRequests, len(r.Ranks))
		for i := range r.Ranks {
			rr := &r.Ranks[i]
			out.Ranks[i] = &loadv1.RankRequests{
				DpRank:       int64(rr.DPRank),
				InFlight:     int64(rr.InFlight),
				Queued:       int64(rr.Queued),
				Limit:        int64(rr.Limit),
				QueueLimit:   int64(rr.QueueLimit),
				WaitingLimit: int64(rr.WaitingLimit),
				Prefilling:   int64(rr.Prefilling),

				PrefillTokens:     rr.PrefillTokens,
				QueuedTokens:      rr.QueuedTokens,
				PrefillTokenLimit: rr.PrefillTokenLimit,
				QueueTokenLimit:   rr.QueueTokenLimit,
			}
		}
	}
	return out
}

func rankToProto(r *report.Rank) *loadv1.Rank {
	return &loadv1.Rank{
		DpRank:              int64(r.DPRank),
		Busy:                r.Busy,
		KvTotalBlocks:       countToProto(r.KVTotalBlocks),
		KvUsedBlocks:        countToProto(r.KVUsedBlocks),
		ActiveDecodeBlocks:  countToProto(r.ActiveDecodeBlocks),
		ActivePrefillTokens: countToProto(r.ActivePrefillTokens),
		MaxNumBatchedTokens: countToProto(r.MaxNumBatchedTokens),
		NumRequestsRunning:  countToProto(r.NumRequestsRunning),
		NumRequestsWaiting:  countToProto(r.NumRequestsWaiting),
		BlockSize:           countToProto(r.BlockSize),
	}
}

func countToProto(f report.Field) *loadv1.Count {
	if !f.Known() {
		return nil
	}
	src := loadv1.Source_SOURCE_UNSPECIFIED // read back as engine
	switch f.Source {
	case report.SourceEngine:
		src = loadv1.Source_SOURCE_ENGINE
	case report.SourceStatic:
		src = loadv1.Source_SOURCE_STATIC
	case report.SourceSlotgate:
		src = loadv1.Source_SOURCE_SLOTGATE
	}
	return &loadv1.Count{Value: f.N, Source: src}
}

// FromProto returns the Snapshot that l describes. It never fails: unset
// messages and fields read as their zero values (an unset Count as an
// unknown count), so FromProto(nil) is the zero Snapshot. A Count whose
// source is unspecified, or unknown to this version, is taken as coming
// from the engine, as report's JSON reader does. Times are in UTC. An
// unset or negative ttl reads as 0, no TTL; one longer than a
// time.Duration holds, as the longest.
func FromProto(l *loadv1.Load) report.Snapshot {
	e := l.GetEngine()
	s := report.Snapshot{
		Seq:   l.GetSeq(),
		At:    timeFromProto(l.GetAt()),
		Epoch: l.GetEpoch(),
		TTL:   ttlFromProto(l.GetTtl()),
		Busy:  l.GetBusy(),
		Stale: l.GetStale(),
		Engine: report.Engine{
			Dialect:       e.GetDialect(),
			ScrapedAt:     timeFromProto(e.GetScrapedAt()),
			FailedScrapes: int(e.GetFailedScrapes()),
			Error:         e.GetError(),
		},
		Requests: requestsFromProto(l.GetRequests()),
		Ranks:    make([]report.Rank, len(l.GetRanks())),
	}
	if t := l.GetThresholds(); t != nil {
		// Copies, so that the Snapshot shares nothing with l.
		s.Thresholds = report.Thresholds{
			ActiveDecodeBlocks:      clonePtr(t.ActiveDecodeBlocks),
			ActivePrefillTokens:     clonePtr(t.ActivePrefillTokens),
			ActivePrefillTokensFrac: clonePtr(t.ActivePrefillTokensFrac),
		}
	}
	for i, rk := range l.GetRanks() {
		s.Ranks[i] = rankFromProto(rk)
	}
	return s
}

// requestsFromProto reads r; Ranks is nil when r has none, as when the
// limits are for the whole engine.
func requestsFromProto(r *loadv1.Requests) report.Requests {
	out := report.Requests{
		InFlight:     int(r.GetInFlight()),
		Queued:       int(r.GetQueued()),
		Limit:        int(r.GetLimit()),
		QueueLimit:   int(r.GetQueueLimit()),
		WaitingLimit: int(r.GetWaitingLimit()),
		Prefilling:   int(r.GetPrefilling()),

		PrefillTokens:     r.GetPrefillTokens(),
		QueuedTokens:      r.GetQueuedTokens(),
		PrefillTokenLimit: r.GetPrefillTokenLimit(),
		QueueTokenLimit:   r.GetQueueTokenLimit(),
	}
	if rs := r.GetRanks(); len(rs) > 0 {
		out.Ranks = make([]report.RankRequests, len(rs))
		for i, rr := range rs {
			out.Ranks[i] = report.RankRequests{
				DPRank:       int(rr.GetDpRank()),
				InFlight:     int(rr.GetInFlight()),
				Queued:       int(rr.GetQueued()),
				Limit:        int(rr.GetLimit()),
				QueueLimit:   int(rr.GetQueueLimit()),
				WaitingLimit: int(rr.GetWaitingLimit()),
				Prefilling:   int(rr.GetPrefilling()),

				PrefillTokens:     rr.GetPrefillTokens(),
				QueuedTokens:      rr.GetQueuedTokens(),
				PrefillTokenLimit: rr.GetPrefillTokenLimit(),
				QueueTokenLimit:   rr.GetQueueTokenLimit(),
			}
		}
	}
	return out
}

func rankFromProto(r *loadv1.Rank) report.Rank {
	return report.Rank{
		DPRank:              int(r.GetDpRank()),
		Busy:                r.GetBusy(),
		KVTotalBlocks:       countFromProto(r.GetKvTotalBlocks()),
		KVUsedBlocks:        countFromProto(r.GetKvUsedBlocks()),
		ActiveDecodeBlocks:  countFromProto(r.GetActiveDecodeBlocks()),
		ActivePrefillTokens: countFromProto(r.GetActivePrefillTokens()),
		MaxNumBatchedTokens: countFromProto(r.GetMaxNumBatchedTokens()),
		NumRequestsRunning:  countFromProto(r.GetNumRequestsRunning()),
		NumRequestsWaiting:  countFromProto(r.GetNumRequestsWaiting()),
		BlockSize:           countFromProto(r.GetBlockSize()),
	}
}

func countFromProto(c *loadv1.Count) report.Field {
	if c == nil {
		return report.Field{}
	}
	src := report.SourceEngine
	switch c.GetSource() {
	case loadv1.Source_SOURCE_STATIC:
		src = report.SourceStatic
	case loadv1.Source_SOURCE_SLOTGATE:
		src = report.SourceSlotgate
	}
	return report.Field{N: c.GetValue(), Source: src}
}

// ttlToProto leaves a TTL of 0 (none) unset.
func ttlToProto(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

// ttlFromProto reads ttl as AsDuration does, saturating what a
// time.Duration cannot hold; a negative one, which no slotgate sends, is
// read as no TTL (0) rather than as a load already expired.
func ttlFromProto(ttl *durationpb.Duration) time.Duration {
	if ttl == nil {
		return 0
	}
	return max(ttl.AsDuration(), 0)
}

func timeToProto(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func timeFromProto(ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return ts.AsTime()
}

// validUTF8 returns s, or a copy with U+FFFD for each run of bad bytes:
// proto3 refuses to marshal a string that is not UTF-8, and one scrape
// error quoting an engine's bytes must not break every stream.
func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
