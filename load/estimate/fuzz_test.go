package estimate_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/slotgate/slotgate/load/estimate"
)

var promptSeeds = []string{
	`{"model":"m","prompt":"hello world","max_tokens":16,"stream":true}`,
	`{"prompt":["abc","\u00e9\ud83d\ude42"]}`,
	`{"prompt":[1,2,3]}`,
	`{"prompt":[[1,2],[3,-4.5e+6]]}`,
	`{"messages":[{"role":"user","content":"hi \"there\""},{"role":"user","content":[{"type":"text","text":"x"}]}],"max_completion_tokens":3}`,
	`{"messages":[{"role":"assistant","content":null}],"stream":false}`,
	"{\"prompt\":\"\xff\xe2\x82\"}",
	`{"prompt":"\ud800\udc00\udc00\ud800x"}`,
	`{"prompt":"a",}`,
	`{"prompt":[01]}`,
	`[[[[]]]]`,
	``,
}

// FuzzPromptReader checks that any body passes through unchanged, never
// panics, gives the same estimate whatever the split and whatever the
// limit above its length, and agrees with the encoding/json reference.
func FuzzPromptReader(f *testing.F) {
	for _, s := range promptSeeds {
		f.Add([]byte(s), uint16(7))
	}
	f.Fuzz(func(t *testing.T, body []byte, limit uint16) {
		_, want, _ := estimateParts([][]byte{body}, noLimit)
		if ref := reference(body); want != ref {
			t.Fatalf("estimate %+v, encoding/json reference %+v", want, ref)
		}
		if got := afterReset(body, noLimit); got != want {
			t.Fatalf("a counter reset after another body: %+v, a new one %+v", got, want)
		}
		for i, parts := range splits(body) {
			out, got, err := estimateParts(parts, noLimit)
			if err != nil || !bytes.Equal(out, body) {
				t.Fatalf("split %d: %v; output differs from input", i, err)
			}
			if got != want {
				t.Fatalf("split %d: %+v, one-shot %+v", i, got, want)
			}
		}
		// A limit cuts the estimate, never the bytes, and stays split-stable.
		cut, cutWant, _ := estimateParts([][]byte{body}, int64(limit)+1)
		if !bytes.Equal(cut, body) {
			t.Fatal("a limit changed the bytes")
		}
		if int(limit)+1 >= len(body) && cutWant != want {
			t.Fatalf("within the limit: %+v, without: %+v", cutWant, want)
		}
		if cutWant.Partial && (cutWant.Known || cutWant.Exact) {
			t.Fatalf("partial estimate %+v is Known or Exact", cutWant)
		}
		for i, parts := range splits(body) {
			if _, got, _ := estimateParts(parts, int64(limit)+1); got != cutWant {
				t.Fatalf("limit %d, split %d: %+v, one-shot %+v", limit+1, i, got, cutWant)
			}
		}
	})
}

// FuzzStreamCounter checks that any response never panics and gives the
// same counts whatever the split.
func FuzzStreamCounter(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("data: {\"choices\":[{\"text\":\"a\"}]}\r\n\r\n: c\rdata: [DONE]\r"))
	f.Add([]byte("data: {\"choices\":\ndata: [{\"delta\":{\"content\":\"\\u00e9\"}}],\"usage\":{\"completion_tokens\":3}}\n\n"))
	f.Add([]byte(`{"choices":[{"message":{"content":"abc"}}],"usage":null}`))
	f.Add([]byte("{}0")) // regression: trailing bytes after a whole response
	f.Fuzz(func(t *testing.T, stream []byte) {
		want := counts([][]byte{stream})
		if want.Generated < 0 || want.PromptTokens < 0 {
			t.Fatalf("negative counts %+v", want)
		}
		if got := countsAfterReset(stream); got != want {
			t.Fatalf("a counter reset after another response: %+v, a new one %+v", got, want)
		}
		for i, parts := range splits(stream) {
			if got := counts(parts); got != want {
				t.Fatalf("split %d: %+v, one-shot %+v", i, got, want)
			}
		}
	})
}

// used leaves a counter's parser deep in unfinished containers, with an
// event and a count under way: what a reset must forget.
const used = `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"abc`

// afterReset estimates body with a counter reset after another body.
func afterReset(body []byte, limit int64) estimate.Estimate {
	c := estimate.NewPromptCounter(0)
	_, _ = c.Write([]byte(used + `"}]}],"prompt":[[[[[[`))
	c.Reset(limit)
	_, _ = c.Write(body)
	_ = c.Close()
	return c.Estimate()
}

// countsAfterReset counts stream with a counter reset after another
// response.
func countsAfterReset(stream []byte) estimate.Counts {
	s := estimate.NewStreamCounter()
	_, _ = s.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: " + used))
	s.Reset()
	_, _ = s.Write(stream)
	_ = s.Close()
	return s.Counts()
}
