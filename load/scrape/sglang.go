package scrape

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/slotgate/slotgate/load"
)

// sglangLoads is the part of SGLang's GET /v1/loads answer that slotgate
// reads (python/sglang/srt/entrypoints/v1_loads.py). Pointers tell a
// missing field from 0.
type sglangLoads struct {
	Loads *[]sglangRank `json:"loads"`
}

// sglangRank is one GetLoadsReqOutput.
type sglangRank struct {
	DPRank                   *int64 `json:"dp_rank"`
	NumRunningReqs           *int64 `json:"num_running_reqs"`
	NumWaitingReqs           *int64 `json:"num_waiting_reqs"`
	NumWaitingUncachedTokens *int64 `json:"num_waiting_uncached_tokens"`
	NumUsedTokens            *int64 `json:"num_used_tokens"`
	NumTotalTokens           *int64 `json:"num_total_tokens"`
	MaxTotalNumTokens        *int64 `json:"max_total_num_tokens"`
}

// ParseSGLang reads SGLang's GET /v1/loads JSON and returns one Rank per
// entry of loads, sorted by dp_rank (an entry without dp_rank is its
// position):
//
//   - NumRequestsRunning and NumRequestsWaiting from num_running_reqs and
//     num_waiting_reqs;
//   - ActivePrefillTokens from num_waiting_uncached_tokens, or, from
//     servers without it, num_total_tokens − num_used_tokens (which counts
//     prefix cache hits too);
//   - with pageSize > 0 (SGLang's page size, which /v1/loads does not
//     carry), KVTotalBlocks = max_total_num_tokens ÷ pageSize, rounded
//     down, and KVUsedBlocks = num_used_tokens ÷ pageSize, rounded up and
//     at most KVTotalBlocks. With pageSize ≤ 0 both stay unknown.
//
// BlockSize and MaxNumBatchedTokens are left to the caller. It fails on a
// body that is not a JSON object with a loads array, a repeated dp_rank,
// or a negative count.
func ParseSGLang(r io.Reader, pageSize int64) ([]load.Rank, error) {
	var body sglangLoads
	if err := json.NewDecoder(r).Decode(&body); err != nil {
		return nil, fmt.Errorf("parse sglang loads: %w", err)
	}
	if body.Loads == nil {
		return nil, errors.New("parse sglang loads: no loads array")
	}
	out := make([]load.Rank, 0, len(*body.Loads))
	for i, l := range *body.Loads {
		r := load.Rank{
			DPRank: i, NumRequestsRunning: engineIfPresent(l.NumRunningReqs),
			NumRequestsWaiting: engineIfPresent(l.NumWaitingReqs), ActivePrefillTokens: sglangPrefill(l),
		}
		if l.DPRank != nil {
			if *l.DPRank < 0 || *l.DPRank >= maxDPRank {
				return nil, fmt.Errorf("parse sglang loads: %w: dp_rank %d", errInsane, *l.DPRank)
			}
			r.DPRank = int(*l.DPRank)
		}
		if pageSize > 0 && l.MaxTotalNumTokens != nil && *l.MaxTotalNumTokens >= 0 {
			r.KVTotalBlocks = fromEngine(*l.MaxTotalNumTokens / pageSize)
			if l.NumUsedTokens != nil && *l.NumUsedTokens >= 0 {
				used := *l.NumUsedTokens/pageSize + min(*l.NumUsedTokens%pageSize, 1)
				r.KVUsedBlocks = fromEngine(min(used, r.KVTotalBlocks.N))
			}
		}
		out = append(out, r)
	}
	sortRanks(out)
	if err := checkRanks(out); err != nil {
		return nil, fmt.Errorf("parse sglang loads: %w", err)
	}
	return out, nil
}

// sglangPrefill is the tokens waiting for prefill, unknown when the server
// reports neither form.
func sglangPrefill(l sglangRank) load.Value {
	if l.NumWaitingUncachedTokens != nil {
		return fromEngine(*l.NumWaitingUncachedTokens)
	}
	if l.NumTotalTokens != nil && l.NumUsedTokens != nil && *l.NumTotalTokens >= *l.NumUsedTokens {
		return fromEngine(*l.NumTotalTokens - *l.NumUsedTokens)
	}
	return load.Value{}
}

// SGLangInfo is what slotgate learns once about an SGLang server, besides
// its loads.
type SGLangInfo struct {
	// PageSize is the tokens per KV page (SGLang's block size).
	PageSize load.Value
	// MaxPrefillTokens is --max-prefill-tokens, the value Dynamo maps to
	// max_num_batched_tokens.
	MaxPrefillTokens load.Value
}

// ParseSGLangServerInfo reads SGLang's GET /server_info JSON (ServerArgs
// at the top level): page_size and max_prefill_tokens, each unknown when
// absent, null or not a positive integer. It fails on a body that is not
// a JSON object.
func ParseSGLangServerInfo(r io.Reader) (SGLangInfo, error) {
	var body struct {
		PageSize         *int64 `json:"page_size"`
		MaxPrefillTokens *int64 `json:"max_prefill_tokens"`
	}
	if err := json.NewDecoder(r).Decode(&body); err != nil {
		return SGLangInfo{}, fmt.Errorf("parse sglang server info: %w", err)
	}
	return SGLangInfo{PageSize: positive(body.PageSize), MaxPrefillTokens: positive(body.MaxPrefillTokens)}, nil
}

// ParseSGLangMetrics reads the page size from SGLang's Prometheus text
// (GET /metrics, with --enable-metrics): the gauge sglang:page_size, or
// the page_size label of sglang:cache_config_info, as llm-d's versions
// disagree on which one carries it. MaxPrefillTokens stays unknown.
func ParseSGLangMetrics(r io.Reader) (SGLangInfo, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return SGLangInfo{}, fmt.Errorf("parse sglang metrics: %w", err)
	}
	var info SGLangInfo
	for _, m := range fams["sglang:page_size"].GetMetric() {
		if v, ok := sampleValue(m); ok && v >= 1 && v <= maxCount {
			info.PageSize = fromEngine(int64(v))
			return info, nil
		}
	}
	for _, m := range fams["sglang:cache_config_info"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if n, err := strconv.ParseInt(lp.GetValue(), 10, 64); err == nil && lp.GetName() == "page_size" {
				info.PageSize = positive(&n)
				return info, nil
			}
		}
	}
	return info, nil
}

// positive is an engine value for *p > 0, unknown otherwise.
func positive(p *int64) load.Value {
	if p == nil || *p <= 0 {
		return load.Value{}
	}
	return fromEngine(*p)
}
