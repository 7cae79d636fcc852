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

// FuzzParseSGLangInfo feeds any body to both readers of SGLang's page size
// (GET /server_info's JSON, and GET /metrics's text): neither panics, and
// a value either gives is known only when positive; the metrics never
// give MaxPrefillTokens.
func FuzzParseSGLangInfo(f *testing.F) {
	f.Add(readFile(f, "sglang_server_info.json"))
	f.Add([]byte(`{"page_size":0,"max_prefill_tokens":-1}`))
	f.Add([]byte(`{"page_size":9223372036854775808}`))
	f.Add([]byte(`{"page_size":null,"max_prefill_tokens":1.5}`))
	f.Add([]byte("# TYPE sglang:page_size gauge\nsglang:page_size 64\n"))
	f.Add([]byte("sglang:page_size NaN\nsglang:page_size 1e300\nsglang:cache_config_info{page_size=\"-3\"} 1\n"))
	f.Add([]byte("sglang:cache_config_info{page_size=\"9223372036854775807\"} 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(what string, info scrape.SGLangInfo) {
			t.Helper()
			for _, v := range []struct {
				name string
				n    int64
				ok   bool
			}{{"PageSize", info.PageSize.N, info.PageSize.Known()}, {"MaxPrefillTokens", info.MaxPrefillTokens.N, info.MaxPrefillTokens.Known()}} {
				if v.ok && v.n <= 0 {
					t.Fatalf("%s: %s = %d, known", what, v.name, v.n)
				}
			}
		}
		if info, err := scrape.ParseSGLangServerInfo(bytes.NewReader(data)); err == nil {
			check("server info", info)
		}
		if info, err := scrape.ParseSGLangMetrics(bytes.NewReader(data)); err == nil {
			check("metrics", info)
			if info.MaxPrefillTokens.Known() {
				t.Fatalf("metrics gave MaxPrefillTokens %d", info.MaxPrefillTokens.N)
			}
		}
	})
}
