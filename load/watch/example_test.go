package watch_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/slotgate/slotgate/load/report"
	"github.com/slotgate/slotgate/load/watch"
)

// Two sidecars publish their workers' load, one busy and one not; a
// frontend watches both and routes only to the eligible one.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The sidecar side, as slotgate serves it on its admin port.
	sidecar := func(busy bool) *httptest.Server {
		hub, _ := report.NewHub(report.HubOptions{Compute: func() report.Snapshot {
			return report.Snapshot{Busy: busy, Ranks: []report.Rank{{Busy: busy}}}
		}})
		go hub.Run(ctx)
		return httptest.NewServer(report.NewHandler(hub))
	}
	busy, idle := sidecar(true), sidecar(false)
	defer busy.Close()
	defer idle.Close()

	// The frontend side.
	w, err := watch.New(watch.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = w.Add("worker-0", busy.URL)
	_ = w.Add("worker-1", idle.URL)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() {
		stop()
		<-done
	}()

	workers := []string{"worker-0", "worker-1"}
	for {
		changed := w.Changed()
		_, s0, _ := w.Load("worker-0")
		_, s1, _ := w.Load("worker-1")
		if s0 != watch.Unknown && s1 != watch.Unknown {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			fmt.Println("no snapshot in a minute")
			return
		}
	}
	fmt.Println("busy:", w.Busy())
	fmt.Println("eligible:", w.Eligible(workers))
	st, _ := w.Status("worker-0")
	fmt.Println("worker-0:", st.State, "busy:", st.Busy, "eligible:", st.Eligible())
	// Output:
	// busy: [worker-0]
	// eligible: [worker-1]
	// worker-0: fresh busy: true eligible: false
}
