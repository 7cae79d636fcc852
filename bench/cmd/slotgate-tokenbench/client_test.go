package main

import (
	"strings"
	"testing"
)

func TestReadStream(t *testing.T) {
	tests := []struct {
		name              string
		stream            string
		wantFirst, wantOK bool
	}{
		{"chat: role-only first, then text", "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n", true, true},
		{"completion text", "data: {\"choices\":[{\"text\":\"hi\"}]}\n\ndata: [DONE]\n\n", true, true},
		{"comments and usage only", ": keep-alive\n\ndata: {\"choices\":[],\"usage\":{}}\n\ndata: [DONE]\n\n", false, true},
		{"cut off before [DONE]", "data: {\"choices\":[{\"text\":\"hi\"}]}\n\n", true, false},
		{"not JSON", "data: {oops\n\n", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, done, err := readStream(strings.NewReader(tt.stream))
			if err != nil || first.IsZero() == tt.wantFirst || done != tt.wantOK {
				t.Errorf("first token %v, done %v, error %v; want %v, %v", !first.IsZero(), done, err, tt.wantFirst, tt.wantOK)
			}
		})
	}
}

// FuzzReadStream: any stream is read to its end without a panic, and
// [DONE] counts only as a whole data line.
func FuzzReadStream(f *testing.F) {
	f.Add("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n")
	f.Add("data: {\"choices\":[{\"text\":\"\"}]}\ndata: [DONE]x\n")
	f.Add(": c\n\ndata: \n")
	f.Fuzz(func(t *testing.T, s string) {
		_, done, _ := readStream(strings.NewReader(s))
		if done && !strings.Contains(s, "data: [DONE]") {
			t.Errorf("done without a [DONE] line in %q", s)
		}
	})
}

// FuzzSpanFlag: a span that parses is 1 <= Min <= Max.
func FuzzSpanFlag(f *testing.F) {
	for _, s := range []string{"20-80", "1-1", "9-3", "0-5", "-1-2", "5", "a-b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		var s span
		if (spanFlag{&s}).Set(v) == nil && (s.Min < 1 || s.Max < s.Min) {
			t.Errorf("%q parsed as %+v", v, s)
		}
	})
}
