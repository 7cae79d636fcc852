package sim

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
)

// A client that disconnects aborts its request: it leaves the batch or the
// queue and its blocks are freed, streaming or not.
func TestClientDisconnectAborts(t *testing.T) {
	tests := []struct {
		name    string
		stream  bool
		running bool // the engine runs: the request is in the batch
	}{
		{"streaming, running", true, true},
		{"non-streaming, running", false, true},
		{"streaming, waiting", true, false},
		{"non-streaming, waiting", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Speedup 1: 4000 tokens take about 25 s, far longer than the test.
			s := startServer(t, Options{}, tt.running, ServerOptions{})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			body := `{"prompt":"` + strings.Repeat("x", 400) + `","max_tokens":4000,"ignore_eos":true`
			if tt.stream {
				body += `,"stream":true`
			}
			started := make(chan *http.Response, 1)
			// A non-streaming request blocks in Do until cancelled; the
			// goroutine ends once its result is received below.
			go func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/v1/completions", strings.NewReader(body+"}"))
				resp, err := s.client.Do(req)
				if err != nil {
					resp = nil
				}
				started <- resp
			}()
			stats := func() RankStats { return s.engine.Stats().Ranks[0] }
			if tt.running {
				eventually(t, "the request to run", func() bool { return stats().Running == 1 && stats().GenerationTokens > 0 })
			} else {
				eventually(t, "the request to wait", func() bool { return stats().Waiting == 1 })
			}
			if tt.stream {
				resp := <-started
				if tt.running {
					line, err := bufio.NewReader(resp.Body).ReadString('\n')
					if err != nil || !strings.HasPrefix(line, "data: {") {
						t.Fatalf("first event %q, %v", line, err)
					}
				}
				cancel()
				resp.Body.Close()
			} else {
				cancel()
				if resp := <-started; resp != nil {
					resp.Body.Close()
				}
			}
			eventually(t, "the request to be aborted", func() bool {
				s := stats()
				return s.Running == 0 && s.Waiting == 0 && s.UsedBlocks == 0 && s.Finished[FinishAbort] == 1
			})
		})
	}
}
