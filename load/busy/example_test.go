package busy_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/slotgate/slotgate/load"
	"github.com/slotgate/slotgate/load/busy"
)

// A worker with one rank of 100 KV blocks and a decode threshold of 0.8:
// busy above 80 blocks in use, and, once busy, until 76 or fewer (the 5%
// band). When the engine's metrics stop, slotgate's own estimate decides.
func Example() {
	store, err := busy.NewStore(busy.Thresholds{ActiveDecodeBlocks: new(0.8)}, nil)
	if err != nil {
		panic(err)
	}
	ev := busy.NewEvaluator()
	engine := func(n int64) load.Value { return load.Value{N: n, Source: load.SourceEngine} }
	for _, used := range []int64{70, 85, 78, 76} {
		r := load.Rank{KVTotalBlocks: engine(100), KVUsedBlocks: engine(used)}
		fmt.Printf("engine %d/100: busy=%v\n", used, ev.Evaluate(store.Load(), []load.Rank{r}).Busy)
	}
	r := load.Rank{KVTotalBlocks: engine(100), KVUsedBlocks: engine(95)}
	fmt.Printf("engine 95/100: busy=%v\n", ev.Evaluate(store.Load(), []load.Rank{r}).Busy)
	r.KVUsedBlocks = load.Value{} // the engine went stale
	r.ActiveDecodeBlocks = load.Value{N: 12, Source: load.SourceSlotgate}
	fmt.Printf("engine stale, slotgate 12/100: busy=%v\n", ev.Evaluate(store.Load(), []load.Rank{r}).Busy)
	// Output:
	// engine 70/100: busy=false
	// engine 85/100: busy=true
	// engine 78/100: busy=true
	// engine 76/100: busy=false
	// engine 95/100: busy=true
	// engine stale, slotgate 12/100: busy=false
}

func ExampleNewHandler() {
	changed := false
	store, err := busy.NewStore(busy.Thresholds{}, func() { changed = true })
	if err != nil {
		panic(err)
	}
	logf := func(msg string, kv ...any) { fmt.Println(append([]any{"log:", msg}, kv...)...) }
	h := busy.NewHandler(store, "llama", logf)

	for _, r := range []*http.Request{
		httptest.NewRequest(http.MethodPost, busy.Path, strings.NewReader(`{"model":"llama","active_prefill_tokens_threshold":8192}`)),
		httptest.NewRequest(http.MethodPost, busy.Path, strings.NewReader(`{"active_decode_blocks_threshold":1.5}`)),
		httptest.NewRequest(http.MethodGet, busy.Path, nil),
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Body)
	}
	if changed {
		fmt.Println("changed")
	}
	// Output:
	// log: busy thresholds changed model llama old active_decode_blocks_threshold=none active_prefill_tokens_threshold=none active_prefill_tokens_threshold_frac=none new active_decode_blocks_threshold=none active_prefill_tokens_threshold=8192 active_prefill_tokens_threshold_frac=none
	// 200 {"model":"llama","active_decode_blocks_threshold":null,"active_prefill_tokens_threshold":8192,"active_prefill_tokens_threshold_frac":null}
	// 400 {"error":"active_decode_blocks_threshold must be a finite number between 0 and 1, got 1.5"}
	// 200 {"thresholds":[{"model":"llama","active_decode_blocks_threshold":null,"active_prefill_tokens_threshold":8192,"active_prefill_tokens_threshold_frac":null}]}
	// changed
}
