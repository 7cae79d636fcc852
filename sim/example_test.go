package sim_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/slotgate/slotgate/sim"
)

// An engine runs until its context ends; a request is submitted, waited
// for, and closed.
func Example() {
	e, err := sim.New(sim.Options{SpeedupRatio: 1e6})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.Run(ctx) })
	defer wg.Wait()
	defer cancel()

	prompt := sim.TokenizeText("Hello, engine!")
	h, err := e.Submit(sim.Request{PromptTokens: len(prompt), MaxTokens: 5, IgnoreEOS: true, Key: sim.Key(0, 0, prompt)})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	for {
		p, err := h.Wait(ctx)
		if err != nil {
			panic(err)
		}
		if p.Done {
			fmt.Println(len(prompt), "prompt tokens,", p.Tokens, "output tokens, finish_reason", p.FinishReason)
			break
		}
	}
	// Output: 4 prompt tokens, 5 output tokens, finish_reason length
}
