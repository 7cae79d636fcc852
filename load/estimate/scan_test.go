package estimate

import (
	"strings"
	"testing"
)

// TestScanLineAgreesWithLexer checks the counter's fast path against the
// lexer, line by line: scanLine either declines, or accepts exactly the
// lines the lexer reads as one whole value, driving the handler to the
// same state. The lines it must accept (take) are the ones engines send,
// so that the fast path is not silently always declining.
func TestScanLineAgreesWithLexer(t *testing.T) {
	tests := []struct {
		name string
		line string
		take bool
	}{
		{"vllm chat chunk", `{"id":"chatcmpl-9b1f","object":"chat.completion.chunk","created":1718000001,"model":"m","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}]}`, true},
		{"usage chunk", `{"id":"c","choices":[],"usage":{"prompt_tokens":12,"total_tokens":15,"completion_tokens":3}}`, true},
		{"tool call", `{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{}"}}]}}]}`, true},
		{"error object", `{"object":"error","message":"boom","code":400}`, true},
		{"error string", `{"error":"boom"}`, true},
		{"whitespace around and inside", " \t{ \"choices\" : [ { \"text\" : \"a\" } ] , \"x\" : [ ] , \"y\" : { } } \t", true},
		{"numbers", `{"a":-0,"b":1.5,"c":-2e+10,"d":3E-2,"e":0.0,"f":123456789012345678901234567890}`, true},
		{"usage numbers", `{"usage":{"completion_tokens":7,"prompt_tokens":-0}}`, true},
		{"usage fraction is no count", `{"usage":{"completion_tokens":2.0,"prompt_tokens":2e1}}`, true},
		{"usage beyond int32 is no count", `{"usage":{"completion_tokens":123456789012345678901234567890,"prompt_tokens":-3}}`, true},
		{"literals", `{"a":true,"b":false,"c":null,"d":[true,false,null]}`, true},
		{"valid UTF-8", `{"choices":[{"text":"naïve café 東京 🙂"}]}`, true},
		{"long key and value", `{"` + strings.Repeat("k", 40) + `":"` + strings.Repeat("v", 40) + `","object":"` + strings.Repeat("e", 32) + `"}`, true},
		{"escape left to the lexer", `{"choices":[{"text":"a\nb"}]}`, false},
		{"unicode escape left to the lexer", `{"choices":[{"text":"\u00e9"}]}`, false},
		{"invalid UTF-8 left to the lexer", "{\"choices\":[{\"text\":\"\xff\"}]}", false},
		{"deep nesting left to the lexer", `{"a":` + strings.Repeat("[", scanDepth+1) + strings.Repeat("]", scanDepth+1) + `}`, false},
		{"not an object", `[1,2]`, false},
		{"DONE", `[DONE]`, false},
		{"leading zero", `{"a":01}`, false},
		{"bare minus", `{"a":-}`, false},
		{"fraction without digits", `{"a":1.}`, false},
		{"exponent without digits", `{"a":1e+}`, false},
		{"trailing comma", `{"a":1,}`, false},
		{"missing colon", `{"a" 1}`, false},
		{"trailing bytes", `{"a":1} x`, false},
		{"two objects", `{}{}`, false},
		{"truncated", `{"choices":[{"text":"a"}]`, false},
		{"truncated literal", `{"a":nul}`, false},
		{"control byte in string", "{\"a\":\"\x01\"}", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fast responseHandler
			fast.reset()
			took := scanLine([]byte(tt.line), &fast)
			if took != tt.take {
				t.Fatalf("scanLine took the line: %t, want %t", took, tt.take)
			}
			var slow responseHandler
			slow.reset()
			var l lexer
			l.reset(&slow)
			l.write([]byte(tt.line))
			whole := l.finish()
			if took && (!whole || fast != slow) {
				t.Fatalf("scanLine read a line the lexer reads otherwise (whole %t):\nfast %+v\nslow %+v", whole, fast, slow)
			}
		})
	}
}

// FuzzScanLine checks that scanLine never accepts a line the lexer reads
// otherwise: any line it takes is one whole JSON value to the lexer too,
// and leaves the handler as the lexer leaves it.
func FuzzScanLine(f *testing.F) {
	f.Add([]byte(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" w"},"finish_reason":null}],"usage":{"completion_tokens":3}}`))
	f.Add([]byte(`{"a":[-0,1.5e3,true,false,null,{}],"b":"naïve"}`))
	f.Add([]byte(`{"error":{"message":"x"},"object":"error"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast, slow responseHandler
		fast.reset()
		slow.reset()
		if !scanLine(line, &fast) {
			return
		}
		var l lexer
		l.reset(&slow)
		l.write(line)
		if !l.finish() || fast != slow {
			t.Fatalf("scanLine took %q, which the lexer reads otherwise (whole %t):\nfast %+v\nslow %+v", line, l.finish(), fast, slow)
		}
	})
}
