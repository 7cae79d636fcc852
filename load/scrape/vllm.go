package scrape

import (
	"fmt"
	"io"
	"math"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/slotgate/slotgate/load"
)

// vLLM's metric names (vllm/v1/metrics/loggers.py), matched exactly: a
// prefix match on vllm:num_requests_waiting would also catch
// vllm:num_requests_waiting_by_reason.
const (
	vllmRunning     = "vllm:num_requests_running"
	vllmWaiting     = "vllm:num_requests_waiting"
	vllmUsage       = "vllm:kv_cache_usage_perc"
	vllmUsageOld    = "vllm:gpu_cache_usage_perc" // before vLLM 0.9; read only when the new name is absent
	vllmCacheConfig = "vllm:cache_config_info"
	vllmEngineLabel = "engine"
)

// vllmRank collects one engine's raw values.
type vllmRank struct {
	running, waiting  *int64
	usage             *float64
	blocks, blockSize *int64 // blocks: num_gpu_blocks as reported, summed over DP ranks
}

// ParseVLLM reads vLLM's Prometheus text exposition (GET /metrics) and
// returns one Rank per value of the engine label (the global DP rank; a
// series without it is rank 0), sorted by rank:
//
//   - NumRequestsRunning and NumRequestsWaiting from vllm:num_requests_running
//     and vllm:num_requests_waiting;
//   - BlockSize from vllm:cache_config_info's block_size label;
//   - KVTotalBlocks from its num_gpu_blocks label, which vLLM's API server
//     sums over the DP engines it manages, divided back by
//     dataParallelSize, or by the number of engines carrying
//     vllm:cache_config_info when dataParallelSize is 0;
//   - KVUsedBlocks as Dynamo's vLLM backend computes it,
//     int(KVTotalBlocks × vllm:kv_cache_usage_perc), the fraction clamped
//     to [0, 1] (vllm:gpu_cache_usage_perc when the new name is absent).
//
// ActivePrefillTokens and MaxNumBatchedTokens are never known: vLLM does
// not export them. A label "None" (vLLM before its KV cache is sized) leaves
// the value unknown. It fails on text that is not the Prometheus text
// format, a non-integer engine label, or a negative or non-finite value.
func ParseVLLM(r io.Reader, dataParallelSize int) ([]load.Rank, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse vllm metrics: %w", err)
	}
	raw := map[int]*vllmRank{}
	get := func(m *dto.Metric) (*vllmRank, error) {
		rank, err := engineRank(m)
		if err != nil {
			return nil, err
		}
		if raw[rank] == nil {
			raw[rank] = &vllmRank{}
		}
		return raw[rank], nil
	}
	if err := vllmGauges(fams, get); err != nil {
		return nil, err
	}
	if err := vllmCache(fams[vllmCacheConfig], get); err != nil {
		return nil, err
	}
	out := vllmRanks(raw, dataParallelSize)
	if err := checkRanks(out); err != nil {
		return nil, fmt.Errorf("parse vllm metrics: %w", err)
	}
	return out, nil
}

// vllmGauges reads the running, waiting and usage gauges.
func vllmGauges(fams map[string]*dto.MetricFamily, get func(*dto.Metric) (*vllmRank, error)) error {
	usageName := vllmUsage
	if fams[usageName] == nil {
		usageName = vllmUsageOld
	}
	for _, name := range []string{vllmRunning, vllmWaiting, usageName} {
		for _, m := range fams[name].GetMetric() {
			v, ok := sampleValue(m)
			if !ok {
				continue
			}
			vr, err := get(m)
			if err != nil {
				return err
			}
			if name == usageName {
				if math.IsNaN(v) || v < 0 {
					return fmt.Errorf("%w: %s = %v", errInsane, name, v)
				}
				u := min(v, 1)
				vr.usage = &u
				continue
			}
			n, err := toCount(name, v)
			if err != nil {
				return err
			}
			if name == vllmRunning {
				vr.running = &n
			} else {
				vr.waiting = &n
			}
		}
	}
	return nil
}

// vllmCache reads block_size and num_gpu_blocks from the info gauge's
// labels; "None" or another non-integer leaves the value unknown.
func vllmCache(fam *dto.MetricFamily, get func(*dto.Metric) (*vllmRank, error)) error {
	for _, m := range fam.GetMetric() {
		vr, err := get(m)
		if err != nil {
			return err
		}
		for _, lp := range m.GetLabel() {
			n, err := strconv.ParseInt(lp.GetValue(), 10, 64)
			if err != nil {
				continue
			}
			if n < 0 {
				return fmt.Errorf("%w: %s{%s=%d}", errInsane, vllmCacheConfig, lp.GetName(), n)
			}
			switch lp.GetName() {
			case "num_gpu_blocks":
				vr.blocks = &n
			case "block_size":
				vr.blockSize = &n
			}
		}
	}
	return nil
}

// vllmRanks turns the raw values into Ranks, dividing num_gpu_blocks by
// dataParallelSize or, when 0, by the engines that reported it.
func vllmRanks(raw map[int]*vllmRank, dataParallelSize int) []load.Rank {
	divisor := int64(dataParallelSize)
	if divisor <= 0 {
		for _, vr := range raw {
			if vr.blocks != nil {
				divisor++
			}
		}
	}
	out := make([]load.Rank, 0, len(raw))
	for id, vr := range raw {
		r := load.Rank{
			DPRank: id, NumRequestsRunning: engineIfPresent(vr.running),
			NumRequestsWaiting: engineIfPresent(vr.waiting), BlockSize: engineIfPresent(vr.blockSize),
		}
		if vr.blocks != nil && divisor > 0 {
			r.KVTotalBlocks = fromEngine(*vr.blocks / divisor)
			if vr.usage != nil {
				r.KVUsedBlocks = fromEngine(int64(float64(r.KVTotalBlocks.N) * *vr.usage))
			}
		}
		out = append(out, r)
	}
	sortRanks(out)
	return out
}

// engineRank is the metric's engine label as a DP rank; 0 without one.
func engineRank(m *dto.Metric) (int, error) {
	for _, lp := range m.GetLabel() {
		if lp.GetName() != vllmEngineLabel {
			continue
		}
		n, err := strconv.Atoi(lp.GetValue())
		if err != nil || n < 0 || n >= maxDPRank {
			return 0, fmt.Errorf("%w: engine label %q is not a DP rank", errInsane, lp.GetValue())
		}
		return n, nil
	}
	return 0, nil
}

// sampleValue is the value of a gauge, untyped or counter sample.
func sampleValue(m *dto.Metric) (float64, bool) {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue(), true
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue(), true
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue(), true
	}
	return 0, false
}

// maxCount bounds a count read from a float: every integer up to it is
// exact in a float64.
const maxCount = 1 << 53

// toCount converts a gauge that counts something to an integer, rounding
// (Python's prometheus_client writes 12.0).
func toCount(name string, v float64) (int64, error) {
	if math.IsNaN(v) || v < 0 || v > maxCount {
		return 0, fmt.Errorf("%w: %s = %v", errInsane, name, v)
	}
	return int64(math.Round(v)), nil
}
