package limits_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/slotgate/slotgate/admin/limits"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/limiter"
)

func Example() {
	l, err := limiter.New(limiter.Options{Slots: 4, QueueLen: 16})
	if err != nil {
		panic(err)
	}
	h := limits.NewHandler(limits.Options{
		Limits: gate.EngineLimiter(l),
		Logf: func(msg string, kv ...any) {
			// kv is old_ and new_ of each limit, then per_rank: print
			// only the limits that changed, for brevity.
			var diff []any
			for i := 0; i+3 < len(kv); i += 4 {
				if kv[i+1] != kv[i+3] {
					diff = append(diff, kv[i:i+4]...)
				}
			}
			fmt.Println(msg, diff)
		},
	})
	do := func(method, body string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, limits.Path, strings.NewReader(body)))
		fmt.Print(w.Code, " ", w.Body.String(), "\n")
	}
	do(http.MethodGet, "")
	do(http.MethodPost, `{"engine_request_limit":8,"engine_request_waiting_limit":2}`)
	do(http.MethodPost, `{"engine_request_limit":null,"engine_request_waiting_limit":null}`)
	do(http.MethodPost, `{"engine_prefill_token_limit":16384}`)
	// Output:
	// 200 {"engine_request_limit":4,"engine_request_waiting_limit":null,"request_queue_limit":16,"engine_prefill_token_limit":null,"request_queue_token_limit":null,"per_rank":false,"gate":"on"}
	// admission limits changed [old_engine_request_limit 4 new_engine_request_limit 8 old_engine_request_waiting_limit <nil> new_engine_request_waiting_limit 2]
	// 200 {"engine_request_limit":8,"engine_request_waiting_limit":2,"request_queue_limit":16,"engine_prefill_token_limit":null,"request_queue_token_limit":null,"per_rank":false,"gate":"on"}
	// 400 {"error":"at least one engine limit must stay set: engine_request_limit and engine_request_waiting_limit cannot both be null"}
	// admission limits changed [old_engine_prefill_token_limit <nil> new_engine_prefill_token_limit 16384]
	// 200 {"engine_request_limit":8,"engine_request_waiting_limit":2,"request_queue_limit":16,"engine_prefill_token_limit":16384,"request_queue_token_limit":null,"per_rank":false,"gate":"on"}
}
