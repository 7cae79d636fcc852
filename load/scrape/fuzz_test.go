package scrape_test

import (
	"bytes"
	"testing"

	"github.com/slotgate/slotgate/load/scrape"
)

// The fuzz targets check that no input makes a parser panic, and that a
// parse without error keeps the parsers' promises (checkSane).

func FuzzParseVLLM(f *testing.F) {
	for _, name := range []string{"vllm_dp2.txt", "vllm_external_lb_rank3.txt"} {
		f.Add(readFile(f, name), uint8(0))
	}
	f.Add([]byte("vllm:kv_cache_usage_perc{engine=\"0\"} 1e308\nvllm:cache_config_info{engine=\"0\",num_gpu_blocks=\"9223372036854775807\"} 1\n"), uint8(3))
	f.Add([]byte("vllm:num_requests_running{engine=\"65535\"} +Inf\n"), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, dp uint8) {
		ranks, err := scrape.ParseVLLM(bytes.NewReader(data), int(dp))
		if err == nil {
			checkSane(t, ranks)
		}
	})
}

func FuzzParseSGLang(f *testing.F) {
	for _, name := range []string{"sglang_loads_dp2.json", "sglang_loads_old.json"} {
		f.Add(readFile(f, name), int64(16))
	}
	f.Add([]byte(`{"loads":[{"dp_rank":3,"num_used_tokens":9223372036854775807,"max_total_num_tokens":5}]}`), int64(7))
	f.Add([]byte(`{"loads":[{"num_total_tokens":-9223372036854775808,"num_used_tokens":1}]}`), int64(-1))
	f.Fuzz(func(t *testing.T, data []byte, page int64) {
		ranks, err := scrape.ParseSGLang(bytes.NewReader(data), page)
		if err == nil {
			checkSane(t, ranks)
		}
	})
}

func FuzzParseTRTLLM(f *testing.F) {
	for _, name := range []string{"trtllm_iterations_dp2.json", "trtllm_tensorrt_backend.json", "trtllm_empty.json"} {
		f.Add(readFile(f, name))
	}
	f.Add([]byte(`[{"inflightBatchingStats":{"numCtxTokens":9223372036854775807,"numQueuedCtxTokens":9223372036854775807}}]`))
	f.Add([]byte(`[{"iter":2,"attentionDpRank":1},{"iter":1,"attentionDpRank":1,"numActiveRequests":3}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ranks, err := scrape.ParseTRTLLM(bytes.NewReader(data))
		if err == nil {
			checkSane(t, ranks)
		}
	})
}
