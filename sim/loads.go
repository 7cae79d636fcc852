package sim

import (
	"net/http"
	"strconv"
	"time"
)

// loadsResponse is SGLang's GET /v1/loads (python/sglang/srt/entrypoints/
// v1_loads.py).
type loadsResponse struct {
	Timestamp   string         `json:"timestamp"`
	Version     string         `json:"version"`
	DPRankCount int            `json:"dp_rank_count"`
	Loads       []rankLoad     `json:"loads"`
	Aggregate   loadsAggregate `json:"aggregate"`
}

// rankLoad is one rank's GetLoadsReqOutput. num_waiting_uncached_tokens is
// the waiting requests' tokens (no prefix cache here); num_total_tokens is
// used plus those; utilization is not modelled and always 0.
type rankLoad struct {
	DPRank                   int     `json:"dp_rank"`
	NumRunningReqs           int     `json:"num_running_reqs"`
	NumWaitingReqs           int     `json:"num_waiting_reqs"`
	NumWaitingUncachedTokens int     `json:"num_waiting_uncached_tokens"`
	NumUsedTokens            int     `json:"num_used_tokens"`
	NumTotalTokens           int     `json:"num_total_tokens"`
	MaxTotalNumTokens        int     `json:"max_total_num_tokens"`
	TokenUsage               float64 `json:"token_usage"`
	GenThroughput            float64 `json:"gen_throughput"`
	CacheHitRate             float64 `json:"cache_hit_rate"`
	Utilization              float64 `json:"utilization"`
	MaxRunningRequests       int     `json:"max_running_requests"`
}

type loadsAggregate struct {
	TotalRunningReqs int     `json:"total_running_reqs"`
	TotalWaitingReqs int     `json:"total_waiting_reqs"`
	TotalReqs        int     `json:"total_reqs"`
	TotalUsedTokens  int     `json:"total_used_tokens"`
	TotalTokens      int     `json:"total_tokens"`
	AvgTokenUsage    float64 `json:"avg_token_usage"`
	AvgThroughput    float64 `json:"avg_throughput"`
	AvgUtilization   float64 `json:"avg_utilization"`
}

func toRankLoad(s RankStats) rankLoad {
	used := s.UsedBlocks * s.BlockSize
	return rankLoad{
		DPRank: s.Rank, NumRunningReqs: s.Running, NumWaitingReqs: s.Waiting,
		NumWaitingUncachedTokens: s.WaitingTokens, NumUsedTokens: used, NumTotalTokens: used + s.WaitingTokens,
		MaxTotalNumTokens: s.UsableBlocks * s.BlockSize, TokenUsage: s.KVUsage(), GenThroughput: s.GenThroughput,
		MaxRunningRequests: s.MaxNumSeqs,
	}
}

// loads serves GET /v1/loads; ?dp_rank=N keeps one rank. The include
// parameter is accepted and ignored (all sections are core ones here);
// format must be json.
func (s *server) loads(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if f := q.Get("format"); f != "" && f != "json" {
		writeError(w, http.StatusBadRequest, "enginesim serves /v1/loads as format=json only, got "+strconv.Quote(f))
		return
	}
	st := s.engine.Stats()
	ranks := st.Ranks
	if v := q.Get("dp_rank"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n >= len(ranks) {
			writeError(w, http.StatusBadRequest, "dp_rank must be an integer from 0 through "+strconv.Itoa(len(ranks)-1)+", got "+strconv.Quote(v))
			return
		}
		ranks = ranks[n : n+1]
	}
	out := loadsResponse{
		Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Version: "enginesim",
		DPRankCount: len(st.Ranks), Loads: make([]rankLoad, 0, len(ranks)),
	}
	a := &out.Aggregate
	for _, rs := range ranks {
		l := toRankLoad(rs)
		out.Loads = append(out.Loads, l)
		a.TotalRunningReqs += l.NumRunningReqs
		a.TotalWaitingReqs += l.NumWaitingReqs
		a.TotalUsedTokens += l.NumUsedTokens
		a.TotalTokens += l.NumTotalTokens
		a.AvgTokenUsage += l.TokenUsage / float64(len(ranks))
		a.AvgThroughput += l.GenThroughput / float64(len(ranks))
	}
	a.TotalReqs = a.TotalRunningReqs + a.TotalWaitingReqs
	writeJSON(w, http.StatusOK, out)
}

// iterations is trtllm-serve's GET /metrics: the iteration stats recorded
// since the last call, oldest first; a second call returns [].
func (s *server) iterations(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.engine.DrainIterations())
}
