package estimate_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/load/estimate"
)

const noLimit = 0

func TestPromptReader(t *testing.T) {
	long := strings.Repeat("abcd", 1000) // 4000 bytes, 1000 tokens
	tests := []struct {
		name  string
		body  string
		limit int64
		want  estimate.Estimate
	}{
		// Completions.
		{"text prompt", `{"model":"m","prompt":"hello world"}`, noLimit,
			estimate.Estimate{PromptTokens: 3, Known: true}},
		{"empty text prompt", `{"prompt":""}`, noLimit, estimate.Estimate{Known: true}},
		{"array of strings", `{"prompt":["abcd","abcde"]}`, noLimit,
			estimate.Estimate{PromptTokens: 3, Known: true}},
		{"token ids", `{"prompt":[1,2,3,40000]}`, noLimit,
			estimate.Estimate{PromptTokens: 4, Exact: true, Known: true}},
		{"arrays of token ids", `{"prompt":[[1,2],[3],[]]}`, noLimit,
			estimate.Estimate{PromptTokens: 3, Exact: true, Known: true}},
		{"empty ids", `{"prompt":[]}`, noLimit, estimate.Estimate{Exact: true, Known: true}},
		{"ids and text mixed", `{"prompt":[1,"abcd"]}`, noLimit, estimate.Estimate{PromptTokens: 2, Known: true}},
		{"whitespace everywhere", " {\n\t\"prompt\" : [ 1 , 2 ] ,\r\n \"stream\" : true } \n", noLimit,
			estimate.Estimate{PromptTokens: 2, Exact: true, Known: true, Stream: true}},
		{"max_tokens and stream", `{"prompt":"hi","max_tokens":128,"stream":true}`, noLimit,
			estimate.Estimate{PromptTokens: 1, Known: true, MaxTokens: 128, Stream: true}},
		{"stream false", `{"prompt":"hi","stream":false}`, noLimit, estimate.Estimate{PromptTokens: 1, Known: true}},
		{"max_tokens null", `{"prompt":"hi","max_tokens":null}`, noLimit, estimate.Estimate{PromptTokens: 1, Known: true}},
		{"max_tokens fraction", `{"prompt":"hi","max_tokens":1.5}`, noLimit, estimate.Estimate{PromptTokens: 1, Known: true}},
		{"max_tokens exponent", `{"prompt":"hi","max_tokens":1e3}`, noLimit, estimate.Estimate{PromptTokens: 1, Known: true}},
		{"max_tokens negative", `{"prompt":"hi","max_tokens":-5}`, noLimit, estimate.Estimate{PromptTokens: 1, Known: true}},
		{"max_completion_tokens wins", `{"messages":[],"max_completion_tokens":7,"max_tokens":9}`, noLimit,
			estimate.Estimate{Known: true, MaxTokens: 7}},
		{"repeated key: last wins", `{"prompt":"abcdefgh","prompt":[5],"max_tokens":3,"max_tokens":4}`, noLimit,
			estimate.Estimate{PromptTokens: 1, Exact: true, Known: true, MaxTokens: 4}},
		{"prompt of the wrong type", `{"prompt":42}`, noLimit, estimate.Estimate{}},
		{"nested prompt key is not the prompt", `{"extra":{"prompt":"abcdefgh"},"prompt":"a"}`, noLimit,
			estimate.Estimate{PromptTokens: 1, Known: true}},
		{"escaped key", `{"pr\u006fmpt":"abcde"}`, noLimit, estimate.Estimate{PromptTokens: 2, Known: true}},
		{"other fields skipped", `{"n":1,"logit_bias":{"5":-100},"stop":["\n",null],"temperature":0.7,"prompt":"abc"}`, noLimit,
			estimate.Estimate{PromptTokens: 1, Known: true}},

		// Escapes and Unicode count as decoded UTF-8 bytes.
		{"simple escapes", `{"prompt":"\"\\\/\b\f\n\r\t"}`, noLimit, estimate.Estimate{PromptTokens: 2, Known: true}},
		{"unicode escape 2 bytes", `{"prompt":"\u00e9\u00e9"}`, noLimit, estimate.Estimate{PromptTokens: 1, Known: true}},
		{"unicode escape 3 bytes", `{"prompt":"\u20ac\u20ac"}`, noLimit, estimate.Estimate{PromptTokens: 2, Known: true}},
		{"surrogate pair is 4 bytes", `{"prompt":"\ud83d\ude42"}`, noLimit, estimate.Estimate{PromptTokens: 1, Known: true}},
		{"lone high surrogate is U+FFFD", `{"prompt":"\ud83dx"}`, noLimit, estimate.Estimate{PromptTokens: 1, Known: true}},
		{"two high surrogates", `{"prompt":"\ud83d\ud83d"}`, noLimit, estimate.Estimate{PromptTokens: 2, Known: true}},
		{"lone low surrogate", `{"prompt":"\ude42\ude42"}`, noLimit, estimate.Estimate{PromptTokens: 2, Known: true}},
		{"raw UTF-8", `{"prompt":"héllo 🙂"}`, noLimit, estimate.Estimate{PromptTokens: 3, Known: true}},
		{"invalid UTF-8 is U+FFFD", "{\"prompt\":\"\xff\xfe\"}", noLimit, estimate.Estimate{PromptTokens: 2, Known: true}},
		{"cut UTF-8 sequence", "{\"prompt\":\"\xe2\x82\"}", noLimit, estimate.Estimate{PromptTokens: 2, Known: true}},

		// Chat.
		{"chat string content", `{"messages":[{"role":"user","content":"hello world"}]}`, noLimit,
			estimate.Estimate{PromptTokens: estimate.ChatMessageOverhead + 3, Known: true}},
		{"chat two messages", `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`, noLimit,
			estimate.Estimate{PromptTokens: 2*estimate.ChatMessageOverhead + 3, Known: true}},
		{"chat null content", `{"messages":[{"role":"assistant","content":null}]}`, noLimit,
			estimate.Estimate{PromptTokens: estimate.ChatMessageOverhead, Known: true}},
		{"chat parts are joined before counting", `{"messages":[{"role":"user","content":[{"type":"text","text":"ab"},{"text":"cd","type":"text"},{"type":"image_url","image_url":{"url":"data:..."}}]}]}`, noLimit,
			estimate.Estimate{PromptTokens: estimate.ChatMessageOverhead + 1, Known: true}},
		{"chat content before role", `{"messages":[{"content":"abcdefghi","role":"user"}],"stream":true,"max_completion_tokens":50}`, noLimit,
			estimate.Estimate{PromptTokens: estimate.ChatMessageOverhead + 3, Known: true, MaxTokens: 50, Stream: true}},
		{"chat empty", `{"messages":[]}`, noLimit, estimate.Estimate{Known: true}},
		{"chat message not an object", `{"messages":["hi",{"role":"user","content":"a"}]}`, noLimit,
			estimate.Estimate{PromptTokens: estimate.ChatMessageOverhead + 1, Known: true}},
		{"chat tool call arguments not counted", `{"messages":[{"role":"assistant","content":null,"tool_calls":[{"function":{"arguments":"{\"a\":1}"}}]}]}`, noLimit,
			estimate.Estimate{PromptTokens: estimate.ChatMessageOverhead, Known: true}},

		// Unknown.
		{"empty body", ``, noLimit, estimate.Estimate{}},
		{"no prompt", `{"model":"m"}`, noLimit, estimate.Estimate{}},
		{"top-level array", `[{"prompt":"hi"}]`, noLimit, estimate.Estimate{}},
		{"truncated", `{"prompt":"hello`, noLimit, estimate.Estimate{}},
		{"trailing garbage", `{"prompt":"hi"} x`, noLimit, estimate.Estimate{}},
		{"two objects", `{"prompt":"hi"}{}`, noLimit, estimate.Estimate{}},
		{"trailing comma", `{"prompt":"hi",}`, noLimit, estimate.Estimate{}},
		{"bad escape", `{"prompt":"\x"}`, noLimit, estimate.Estimate{}},
		{"bad unicode escape", `{"prompt":"\u12g4"}`, noLimit, estimate.Estimate{}},
		{"control character", "{\"prompt\":\"a\nb\"}", noLimit, estimate.Estimate{}},
		{"leading zero", `{"prompt":[01]}`, noLimit, estimate.Estimate{}},
		{"bare minus", `{"prompt":[-]}`, noLimit, estimate.Estimate{}},
		{"bad literal", `{"prompt":"a","stream":tru}`, noLimit, estimate.Estimate{}},
		{"mismatched brackets", `{"prompt":[1,2}}`, noLimit, estimate.Estimate{}},
		{"single quotes", `{'prompt':'hi'}`, noLimit, estimate.Estimate{}},

		// The limit.
		{"within the limit", `{"prompt":"abcd"}`, int64(len(`{"prompt":"abcd"}`)),
			estimate.Estimate{PromptTokens: 1, Known: true}},
		{"long prompt beyond the limit", `{"prompt":"` + long + `"}`, 1024,
			estimate.Estimate{PromptTokens: (1024 - len(`{"prompt":"`) + 3) / 4, Partial: true}},
		{"long chat beyond the limit", `{"messages":[{"role":"user","content":"` + long + `"}]}`, 100,
			estimate.Estimate{PromptTokens: estimate.ChatMessageOverhead + (100-len(`{"messages":[{"role":"user","content":"`)+3)/4, Partial: true}},
		{"ids beyond the limit", `{"prompt":[1,2,3,4,5,6]}`, 16, // the 3 may be 34...: an id all the same
			estimate.Estimate{PromptTokens: 3, Partial: true}},
		{"ids beyond the limit after a comma", `{"prompt":[1,2,3,4,5,6]}`, 17,
			estimate.Estimate{PromptTokens: 3, Partial: true}},
		{"malformed before the limit", `{"prompt":x` + long + `"}`, 100, estimate.Estimate{Partial: true}},
		{"long max_tokens field beyond the limit", `{"max_tokens":5,"prompt":"abcd` + long + `"}`, 30,
			estimate.Estimate{PromptTokens: 1, MaxTokens: 5, Partial: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, parts := range splits([]byte(tt.body)) {
				out, got, err := estimateParts(parts, tt.limit)
				if err != nil {
					t.Fatalf("split %d: %v", i, err)
				}
				if string(out) != tt.body {
					t.Fatalf("split %d: the body changed passing through", i)
				}
				if got != tt.want {
					t.Fatalf("split %d: got %+v, want %+v", i, got, tt.want)
				}
			}
			if tt.limit == noLimit {
				if ref := reference([]byte(tt.body)); ref != tt.want {
					t.Errorf("encoding/json reference gives %+v, want %+v", ref, tt.want)
				}
			}
		})
	}
}

// TestPromptReaderDeepNesting checks encoding/json's nesting limit.
func TestPromptReaderDeepNesting(t *testing.T) {
	for _, depth := range []int{10000, 10001} {
		body := `{"prompt":"ab","x":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
		_, got, _ := estimateParts([][]byte{[]byte(body)}, noLimit)
		if want := reference([]byte(body)); got != want {
			t.Errorf("depth %d: got %+v, want %+v", depth, got, want)
		}
	}
}

// errReader returns its data and then err.
type errReader struct {
	data []byte
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func (r *errReader) Close() error { return errClosed }

var (
	errBroken = errors.New("connection reset")
	errClosed = errors.New("closed")
)

func TestPromptReaderPassesErrors(t *testing.T) {
	body := `{"prompt":"abcd"}`
	pr := estimate.NewPromptReader(&errReader{data: []byte(body), err: errBroken}, noLimit)
	select {
	case <-pr.Done():
		t.Fatal("done before the body ended")
	default:
	}
	if _, ok := pr.Estimate(); ok {
		t.Fatal("an estimate before the body ended")
	}
	out, err := io.ReadAll(pr)
	if !errors.Is(err, errBroken) || string(out) != body {
		t.Fatalf("ReadAll = %q, %v; want the body and %v", out, err, errBroken)
	}
	<-pr.Done()
	// The bytes were a whole body, so the estimate stands.
	if e, ok := pr.Estimate(); !ok || !e.Known || e.PromptTokens != 1 {
		t.Errorf("Estimate = %+v, %v", e, ok)
	}
	if err := pr.Close(); !errors.Is(err, errClosed) {
		t.Errorf("Close = %v, want the underlying Close's %v", err, errClosed)
	}
}

func TestPromptReaderCloseBeforeEOF(t *testing.T) {
	pr := estimate.NewPromptReader(strings.NewReader(`{"prompt":"abcdefgh"}`), noLimit)
	buf := make([]byte, 5)
	if n, err := pr.Read(buf); n != 5 || err != nil {
		t.Fatalf("Read = %d, %v", n, err)
	}
	if err := pr.Close(); err != nil {
		t.Fatalf("Close of a non-Closer = %v", err)
	}
	<-pr.Done()
	if e, ok := pr.Estimate(); !ok || e != (estimate.Estimate{}) {
		t.Errorf("Estimate = %+v, %v; want unknown", e, ok)
	}
	// Reads after Close still pass bytes through.
	rest, _ := io.ReadAll(pr)
	if string(rest) != `mpt":"abcdefgh"}` {
		t.Errorf("rest = %q", rest)
	}
}

// TestPromptReaderNoReadAhead checks that a Read asks the underlying
// reader for no more than its caller did.
func TestPromptReaderNoReadAhead(t *testing.T) {
	src := &countingReader{r: strings.NewReader(`{"prompt":"abcdefgh"}`)}
	pr := estimate.NewPromptReader(src, noLimit)
	buf := make([]byte, 3)
	for {
		n, err := pr.Read(buf)
		if src.asked != len(buf) || n > len(buf) {
			t.Fatalf("underlying Read asked for %d bytes, caller for %d", src.asked, len(buf))
		}
		if err != nil {
			break
		}
	}
}

type countingReader struct {
	r     io.Reader
	asked int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.asked = len(p)
	return c.r.Read(p)
}

func TestPromptCounterWriter(t *testing.T) {
	body := []byte(`{"prompt":[1,2,3],"max_tokens":10}`)
	c := estimate.NewPromptCounter(noLimit)
	if n, err := c.Write(body); n != len(body) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if e := c.Estimate(); e.Known {
		t.Errorf("Known before Close: %+v", e)
	}
	c.Close()
	want := estimate.Estimate{PromptTokens: 3, Exact: true, Known: true, MaxTokens: 10}
	if e := c.Estimate(); e != want {
		t.Errorf("Estimate = %+v, want %+v", e, want)
	}
	c.Write([]byte("garbage"))
	if e := c.Estimate(); e != want {
		t.Errorf("a Write after Close changed the estimate: %+v", e)
	}
	if !bytes.Equal(body, []byte(`{"prompt":[1,2,3],"max_tokens":10}`)) {
		t.Error("Write changed its input")
	}
}
