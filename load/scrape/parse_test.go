package scrape_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/load"
	"github.com/slotgate/slotgate/load/scrape"
)

func TestParseVLLM(t *testing.T) {
	tests := []struct {
		name, file, text string
		dp               int
		want             []load.Rank
	}{
		{name: "internal LB, num_gpu_blocks divided by the 2 ranks seen", file: "vllm_dp2.txt", want: []load.Rank{
			{DPRank: 0, KVTotalBlocks: e(27345), KVUsedBlocks: e(6836), NumRequestsRunning: e(3), NumRequestsWaiting: e(12), BlockSize: e(16)},
			{DPRank: 1, KVTotalBlocks: e(27345), KVUsedBlocks: e(13672), NumRequestsRunning: e(5), NumRequestsWaiting: e(0), BlockSize: e(16)},
		}},
		{name: "data parallel size given: it is the divisor", file: "vllm_dp2.txt", dp: 1, want: []load.Rank{
			{DPRank: 0, KVTotalBlocks: e(54690), KVUsedBlocks: e(13672), NumRequestsRunning: e(3), NumRequestsWaiting: e(12), BlockSize: e(16)},
			{DPRank: 1, KVTotalBlocks: e(54690), KVUsedBlocks: e(27345), NumRequestsRunning: e(5), NumRequestsWaiting: e(0), BlockSize: e(16)},
		}},
		{name: "external LB rank: already per rank", file: "vllm_external_lb_rank3.txt", want: []load.Rank{
			{DPRank: 3, KVTotalBlocks: e(10000), KVUsedBlocks: e(int64(10000 * 0.9998)), NumRequestsRunning: e(7), NumRequestsWaiting: e(1), BlockSize: e(32)},
		}},
		{name: "exact names: _by_reason is not the waiting gauge", text: `vllm:num_requests_waiting_by_reason{engine="0",reason="capacity"} 4
vllm:num_requests_running_total{engine="0"} 9
`, want: []load.Rank{}},
		{name: "KV cache not sized yet: None", text: `vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="None"} 1
vllm:kv_cache_usage_perc{engine="0"} 0
`, want: []load.Rank{{DPRank: 0, BlockSize: e(16)}}},
		{name: "old usage name, no engine label", text: `vllm:gpu_cache_usage_perc{model_name="m"} 0.5
vllm:cache_config_info{block_size="16",num_gpu_blocks="101"} 1
vllm:num_requests_running{model_name="m"} 2
`, want: []load.Rank{{DPRank: 0, KVTotalBlocks: e(101), KVUsedBlocks: e(50), NumRequestsRunning: e(2), BlockSize: e(16)}}},
		{name: "usage above 1 is clamped", text: `vllm:kv_cache_usage_perc{engine="0"} 1.5
vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="100"} 1
`, want: []load.Rank{{DPRank: 0, KVTotalBlocks: e(100), KVUsedBlocks: e(100), BlockSize: e(16)}}},
		{name: "nothing of vLLM's", text: "# nothing here\nprocess_open_fds 12\n", want: []load.Rank{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.text
			if tt.file != "" {
				in = body(t, tt.file)
			}
			got, err := scrape.ParseVLLM(strings.NewReader(in), tt.dp)
			if err != nil {
				t.Fatal(err)
			}
			checkSane(t, got)
			equalRanks(t, got, tt.want)
		})
	}
}

func TestParseVLLMErrors(t *testing.T) {
	for _, in := range []string{
		"vllm:num_requests_running{engine=\"0\" 3\n",        // not the text format
		`vllm:num_requests_running{engine="zero"} 3` + "\n", // engine label is not a rank
		`vllm:num_requests_running{engine="-1"} 3` + "\n",
		`vllm:num_requests_running{engine="0"} -3` + "\n",
		`vllm:num_requests_waiting{engine="0"} NaN` + "\n",
		`vllm:kv_cache_usage_perc{engine="0"} -0.1` + "\n",
		`vllm:cache_config_info{engine="0",num_gpu_blocks="-5"} 1` + "\n",
	} {
		if got, err := scrape.ParseVLLM(strings.NewReader(in), 0); err == nil {
			t.Errorf("ParseVLLM(%q) = %+v, want an error", in, got)
		}
	}
}

func TestParseSGLang(t *testing.T) {
	tests := []struct {
		name, file string
		page       int64
		want       []load.Rank
	}{
		{"page 16, ranks sorted", "sglang_loads_dp2.json", 16, []load.Rank{
			{DPRank: 0, KVTotalBlocks: e(25600), KVUsedBlocks: e(12501), NumRequestsRunning: e(31), NumRequestsWaiting: e(9), ActivePrefillTokens: e(14000)},
			{DPRank: 1, KVTotalBlocks: e(25600), KVUsedBlocks: e(514), NumRequestsRunning: e(4), NumRequestsWaiting: e(0), ActivePrefillTokens: e(0)},
		}},
		{"page unknown: no KV blocks", "sglang_loads_dp2.json", 0, []load.Rank{
			{DPRank: 0, NumRequestsRunning: e(31), NumRequestsWaiting: e(9), ActivePrefillTokens: e(14000)},
			{DPRank: 1, NumRequestsRunning: e(4), NumRequestsWaiting: e(0), ActivePrefillTokens: e(0)},
		}},
		{"older server: prefill from total − used", "sglang_loads_old.json", 1, []load.Rank{
			{DPRank: 0, KVTotalBlocks: e(59902), KVUsedBlocks: e(640), NumRequestsRunning: e(2), NumRequestsWaiting: e(1), ActivePrefillTokens: e(512)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := scrape.ParseSGLang(bytes.NewReader(readFile(t, tt.file)), tt.page)
			if err != nil {
				t.Fatal(err)
			}
			checkSane(t, got)
			equalRanks(t, got, tt.want)
		})
	}
	for _, in := range []string{`{}`, `[]`, `{"loads":[{"dp_rank":0},{"dp_rank":0}]}`,
		`{"loads":[{"num_running_reqs":-1}]}`, `{"loads":[{"dp_rank":-2}]}`, `{"loads":`} {
		if got, err := scrape.ParseSGLang(strings.NewReader(in), 16); err == nil {
			t.Errorf("ParseSGLang(%q) = %+v, want an error", in, got)
		}
	}
}

func TestParseSGLangInfo(t *testing.T) {
	info, err := scrape.ParseSGLangServerInfo(bytes.NewReader(readFile(t, "sglang_server_info.json")))
	if err != nil || info != (scrape.SGLangInfo{PageSize: e(16), MaxPrefillTokens: e(16384)}) {
		t.Errorf("ParseSGLangServerInfo = %+v, %v", info, err)
	}
	for _, in := range []string{
		"sglang:page_size{dp_rank=\"0\"} 32\n",
		"sglang:cache_config_info{num_pages=\"100\",page_size=\"32\"} 1\n",
	} {
		info, err := scrape.ParseSGLangMetrics(strings.NewReader(in))
		if err != nil || info.PageSize != e(32) {
			t.Errorf("ParseSGLangMetrics(%q) = %+v, %v; want page size 32", in, info, err)
		}
	}
}

func TestParseTRTLLM(t *testing.T) {
	tests := []struct {
		name, file string
		want       []load.Rank
	}{
		{"attention DP: the latest iteration of each rank", "trtllm_iterations_dp2.json", []load.Rank{
			{DPRank: 0, KVTotalBlocks: e(4592), KVUsedBlocks: e(533), NumRequestsRunning: e(7), NumRequestsWaiting: e(1),
				ActivePrefillTokens: e(3000), MaxNumBatchedTokens: e(8192), BlockSize: e(32)},
			{DPRank: 1, KVTotalBlocks: e(4592), KVUsedBlocks: e(102), NumRequestsRunning: e(3), NumRequestsWaiting: e(0),
				ActivePrefillTokens: e(0), MaxNumBatchedTokens: e(8192), BlockSize: e(32)},
		}},
		{"TensorRT backend: no rank, no queued fields, runtime budget 0", "trtllm_tensorrt_backend.json", []load.Rank{
			{DPRank: 0, KVTotalBlocks: e(12000), KVUsedBlocks: e(10), NumRequestsRunning: e(2), NumRequestsWaiting: e(0),
				ActivePrefillTokens: e(0), BlockSize: e(64)},
		}},
		{"drained: no iterations, no ranks", "trtllm_empty.json", []load.Rank{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := scrape.ParseTRTLLM(bytes.NewReader(readFile(t, tt.file)))
			if err != nil {
				t.Fatal(err)
			}
			checkSane(t, got)
			equalRanks(t, got, tt.want)
		})
	}
	for _, in := range []string{`{}`, `[1]`, `[{"numActiveRequests":-1}]`, `[{"attentionDpRank":-1}]`,
		`[{"kvCacheStats":{"maxNumBlocks":10,"usedNumBlocks":11}}]`, `[{"inflightBatchingStats":{"numCtxTokens":-4,"numQueuedCtxTokens":9}}]`} {
		if got, err := scrape.ParseTRTLLM(strings.NewReader(in)); err == nil {
			t.Errorf("ParseTRTLLM(%q) = %+v, want an error", in, got)
		}
	}
}

func TestParseErrorsWrapNothingSecret(t *testing.T) {
	_, err := scrape.ParseTRTLLM(strings.NewReader(`[{"kvCacheStats":{"maxNumBlocks":1,"usedNumBlocks":2}}]`))
	if err == nil || !strings.Contains(err.Error(), "1 KV blocks") || errors.Unwrap(err) == nil {
		t.Errorf("error %v: want it to name the values and wrap its cause", err)
	}
}

func equalRanks(t *testing.T, got, want []load.Rank) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d ranks %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("rank %d:\n got  %+v\n want %+v", i, got[i], want[i])
		}
	}
}
