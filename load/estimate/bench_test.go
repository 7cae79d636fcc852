package estimate_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/load/estimate"
)

// chatBody is a chat request of exactly 4 KiB, its text mixing ASCII,
// escapes and multi-byte UTF-8.
func chatBody(tb testing.TB) []byte {
	para := "The quick brown fox \"jumps\" over the lazy dog; naïve café — 東京. "
	build := func(pad int) []byte {
		msgs := []map[string]any{{"role": "system", "content": "You are a helpful assistant.\nAnswer briefly." + strings.Repeat(" ", pad)}}
		for range 6 {
			msgs = append(msgs, map[string]any{"role": "user", "content": strings.Repeat(para, 7)})
		}
		b, err := json.Marshal(map[string]any{"model": "meta-llama/Llama-3.1-8B-Instruct", "messages": msgs,
			"max_completion_tokens": 256, "stream": true, "stream_options": map[string]bool{"include_usage": true}, "temperature": 0.7})
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	b := build(0)
	if len(b) > 4096 {
		tb.Fatalf("chat body is %d bytes, over 4 KiB", len(b))
	}
	return build(4096 - len(b))
}

func BenchmarkPromptReader(b *testing.B) {
	body := chatBody(b)
	if _, e, _ := estimateParts([][]byte{body}, noLimit); !e.Known || len(body) != 4096 {
		b.Fatalf("benchmark body (%d bytes) not understood: %+v", len(body), e)
	}
	buf := make([]byte, 32<<10)
	r := bytes.NewReader(body)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(body)
		pr := estimate.NewPromptReader(r, 1<<20)
		if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{pr}, buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStreamCounter(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 64; i++ {
		sb.WriteString(`data: {"id":"chatcmpl-9b1f","object":"chat.completion.chunk","created":1718000001,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	}
	sb.WriteString("data: [DONE]\n\n")
	stream := []byte(sb.String())
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		s := estimate.NewStreamCounter()
		s.Write(stream)
		if s.Counts().Generated != 64 {
			b.Fatal(s.Counts())
		}
	}
}
