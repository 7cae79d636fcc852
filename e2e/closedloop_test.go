package e2e_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
)

// TestClosedLoopAtCapacity: exactly N+Q clients, each sending its next
// streamed request the moment it has read its last answer to the end, on
// a kept connection or a new one each time. A client that has its answer
// finds its slot free, on every path (the relay hands it on as it reads
// the engine's end, before the client has that end), so none of them is
// ever refused: N+Q clients never ask for more than N+Q places at once.
func TestClosedLoopAtCapacity(t *testing.T) {
	t.Parallel()
	const slots, queue, each = 2, 2, 25
	for _, kept := range []bool{true, false} {
		t.Run(fmt.Sprint("kept=", kept), func(t *testing.T) {
			t.Parallel()
			eng := startEnginesim(t, "--speedup-ratio", "10")
			sg := start(t, eng, nil, "--engine-request-limit", fmt.Sprint(slots), "--request-queue-limit", fmt.Sprint(queue))
			var wg sync.WaitGroup
			for c := range slots + queue {
				client := &http.Client{Transport: &http.Transport{DisableKeepAlives: !kept}}
				defer client.CloseIdleConnections()
				wg.Go(func() {
					for i := range each {
						r := post(t.Context(), client, sg.proxy, fmt.Sprintf("c%d-%d", c, i), streamBody(3))
						if why := complete(r); why != "" {
							t.Errorf("client %d, request %d of %d back to back: %s", c, i, each, why)
							return
						}
					}
				})
			}
			wg.Wait()
			if r := sg.metric("dynamo_rejection_request_total"); r > 0 {
				t.Errorf("%v requests refused as over capacity, want none", r)
			}
		})
	}
}
