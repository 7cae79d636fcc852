package watch

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// readAll reads every event of input with a reader bounded at max.
func readAll(input string, max int) (events []event, retry time.Duration, err error) {
	p := newSSEReader(strings.NewReader(input), max)
	for {
		ev, err := p.next()
		if err != nil {
			return events, p.retry, err
		}
		events = append(events, ev)
	}
}

func TestSSEReader(t *testing.T) {
	long := strings.Repeat("x", 16)
	for _, tc := range []struct {
		name      string
		input     string
		max       int
		want      []event
		wantRetry time.Duration
		wantErr   error
	}{
		{name: "one event", input: "event: load\nid: 7\ndata: {}\n\n",
			want: []event{{typ: "load", id: "7", data: []byte("{}")}}},
		{name: "no event field is message", input: "data: a\n\n",
			want: []event{{typ: "message", data: []byte("a")}}},
		{name: "data lines joined with LF", input: "data: a\ndata:\ndata:  b\n\n",
			want: []event{{typ: "message", data: []byte("a\n\n b")}}},
		{name: "CRLF and CR line ends", input: "event: x\r\ndata: a\rdata: b\r\n\rdata: c\n\n",
			want: []event{{typ: "x", data: []byte("a\nb")}, {typ: "message", data: []byte("c")}}},
		{name: "comments ignored", input: ": hello\n:\ndata: a\n: between\n\n",
			want: []event{{typ: "message", data: []byte("a")}}},
		{name: "field without colon", input: "data\ndata\n\n",
			want: []event{{typ: "message", data: []byte("\n")}}},
		{name: "one space stripped, no more", input: "data:a\ndata:  b \n\n",
			want: []event{{typ: "message", data: []byte("a\n b ")}}},
		{name: "value keeps later colons", input: "data: {\"a\":1}\n\n",
			want: []event{{typ: "message", data: []byte(`{"a":1}`)}}},
		{name: "no data no dispatch, type reset", input: "event: load\n\ndata: a\n\n",
			want: []event{{typ: "message", data: []byte("a")}}},
		{name: "id persists, NUL id ignored, empty id clears", input: "id: 1\ndata: a\n\ndata: b\n\nid: 2\x003\ndata: c\n\nid\ndata: d\n\n",
			want: []event{{typ: "message", id: "1", data: []byte("a")}, {typ: "message", id: "1", data: []byte("b")},
				{typ: "message", id: "1", data: []byte("c")}, {typ: "message", id: "", data: []byte("d")}}},
		{name: "id set by an event without data", input: "id: 9\n\ndata: a\n\n",
			want: []event{{typ: "message", id: "9", data: []byte("a")}}},
		{name: "retry digits only", input: "retry: 1500\nretry: 2x\nretry:\nretry: -1\n\n", wantRetry: 1500 * time.Millisecond},
		{name: "retry saturates", input: "retry: 99999999999999999999999\n\n", wantRetry: math.MaxInt64},
		{name: "unknown fields ignored", input: "foo: bar\nData: x\ndata: a\n\n",
			want: []event{{typ: "message", data: []byte("a")}}},
		{name: "event cut by EOF discarded", input: "data: a\n\ndata: b\n",
			want: []event{{typ: "message", data: []byte("a")}}},
		{name: "unterminated line discarded", input: "data: a\n\ndata: b",
			want: []event{{typ: "message", data: []byte("a")}}},
		{name: "leading BOM stripped once", input: "\xef\xbb\xbfdata: a\n\n\xef\xbb\xbfdata: b\n\n",
			want: []event{{typ: "message", data: []byte("a")}}},
		{name: "line at the bound", max: 16, input: "data: " + long[:10] + "\n\n",
			want: []event{{typ: "message", data: []byte(long[:10])}}},
		{name: "line at the bound, CRLF", max: 16, input: "data: " + long[:10] + "\r\n\r\n",
			want: []event{{typ: "message", data: []byte(long[:10])}}},
		{name: "line over the bound", max: 16, input: "data: a\n\ndata: " + long[:11] + "\n\ndata: b\n\n",
			want: []event{{typ: "message", data: []byte("a")}}, wantErr: errTooLong},
		{name: "comment over the bound", max: 16, input: ":" + long + "\ndata: a\n\n", wantErr: errTooLong},
		{name: "unterminated line over the bound", max: 16, input: "data: " + long, wantErr: errTooLong},
		{name: "event data at the bound", max: 16, input: "data: 1234567\ndata: 12345678\n\n",
			want: []event{{typ: "message", data: []byte("1234567\n12345678")}}},
		{name: "event data over the bound", max: 16, input: "data: 1234567\ndata: 123456789\n\n", wantErr: errTooLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			max := tc.max
			if max == 0 {
				max = maxLine
			}
			got, retry, err := readAll(tc.input, max)
			wantErr := tc.wantErr
			if wantErr == nil {
				wantErr = io.EOF
			}
			if !errors.Is(err, wantErr) {
				t.Errorf("err = %v, want %v", err, wantErr)
			}
			if !slices.EqualFunc(got, tc.want, eventEqual) {
				t.Errorf("events = %q, want %q", got, tc.want)
			}
			if retry != tc.wantRetry {
				t.Errorf("retry = %v, want %v", retry, tc.wantRetry)
			}
		})
	}
}

func eventEqual(a, b event) bool {
	return a.typ == b.typ && a.id == b.id && bytes.Equal(a.data, b.data)
}

// TestSSEReaderStopsAfterError checks that a dead stream stays dead.
func TestSSEReaderStopsAfterError(t *testing.T) {
	p := newSSEReader(strings.NewReader("data: 123456789\n\ndata: a\n\n"), 8)
	for range 3 {
		if _, err := p.next(); !errors.Is(err, errTooLong) {
			t.Fatalf("next = %v, want errTooLong", err)
		}
	}
}

// FuzzSSEReader feeds arbitrary bytes: the reader must not panic, must
// honour the bound, and must agree with reference, a plain transcription
// of the standard's algorithm.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"", "\n", "\r", "\r\n", ":\n\n", "data\n\n", "data:\n\n", "event: load\nid: 1\ndata: {}\n\n",
		"data: a\r\ndata: b\rdata: c\n\n", "\xef\xbb\xbfdata: a\n\n", "id: 1\x00\nretry: 10\n\n",
		"retry: 99999999999999999999999\n\n", "data: " + strings.Repeat("y", fuzzMax) + "\n\n",
		"data: 0123456789\ndata: 0123456789\ndata: 0123456789\n\n", strings.Repeat("x", 3*fuzzMax),
		"data: a\r", "data: a\n\ndata: b", "event: x\n\ndata: a\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		got, gotRetry, err := readAll(input, fuzzMax)
		want, wantRetry, wantErr := reference(input, fuzzMax)
		if !errors.Is(err, wantErr) {
			t.Errorf("err = %v, want %v", err, wantErr)
		}
		if !slices.EqualFunc(got, want, eventEqual) {
			t.Errorf("events = %q, want %q", got, want)
		}
		if gotRetry != wantRetry {
			t.Errorf("retry = %v, want %v", gotRetry, wantRetry)
		}
		for _, ev := range got {
			if len(ev.data) > fuzzMax {
				t.Errorf("event data of %d bytes, over the bound %d", len(ev.data), fuzzMax)
			}
		}
	})
}

// lineEnd splits a stream into lines the way the standard does.
var lineEnd = regexp.MustCompile("\r\n|\r|\n")

const fuzzMax = 32

// reference parses input the slow, obvious way, with the same bounds.
func reference(input string, max int) (events []event, retry time.Duration, err error) {
	lines := lineEnd.Split(input, -1)
	tail := lines[len(lines)-1] // not a line: no line end follows
	var typ, data, id string
	hasData := false
	for i, line := range lines[:len(lines)-1] {
		if len(line) > max { // a BOM counts
			return events, retry, errTooLong
		}
		if i == 0 {
			line = strings.TrimPrefix(line, "\xef\xbb\xbf")
		}
		if line == "" {
			if hasData {
				events = append(events, event{typ: cmp.Or(typ, "message"), id: id, data: []byte(data)})
			}
			typ, data, hasData = "", "", false
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		if name == "" {
			continue
		}
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			typ = value
		case "data":
			next := value
			if hasData {
				next = data + "\n" + value
			}
			if len(next) > max {
				return events, retry, errTooLong
			}
			data, hasData = next, true
		case "id":
			if !strings.Contains(value, "\x00") {
				id = value
			}
		case "retry":
			if r, ok := parseRetry([]byte(value)); ok {
				retry = r
			}
		}
	}
	if len(tail) > max {
		return events, retry, errTooLong
	}
	return events, retry, io.EOF
}

// FuzzSSERoundTrip encodes one event as a sidecar would and reads it back.
func FuzzSSERoundTrip(f *testing.F) {
	f.Add("load", "1", `{"seq":1}`)
	f.Add("", "", "")
	f.Add("x", "id", "a\nb\r\nc\rd")
	f.Add(" lead", " space", " data ")
	f.Fuzz(func(t *testing.T, typ, id, data string) {
		if strings.ContainsAny(typ+id, "\r\n\x00") {
			t.Skip("not representable as a field")
		}
		var b strings.Builder
		if typ != "" {
			b.WriteString("event: " + typ + "\n")
		}
		b.WriteString("id: " + id + "\n")
		lines := lineEnd.Split(data, -1)
		for _, l := range lines {
			b.WriteString("data: " + l + "\n")
		}
		b.WriteString("\n")
		events, _, err := readAll(b.String(), maxLine)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("err = %v", err)
		}
		wantType := typ
		if wantType == "" {
			wantType = "message"
		}
		want := event{typ: wantType, id: id, data: []byte(strings.Join(lines, "\n"))}
		if len(events) != 1 || !eventEqual(events[0], want) {
			t.Fatalf("events = %q, want [%q]", events, want)
		}
	})
}

func TestBackoff(t *testing.T) {
	b := backoff{min: 100 * time.Millisecond, max: 5 * time.Second}
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 5000, 5000}
	for round := range 2 {
		for i, w := range want {
			w *= time.Millisecond
			if got := b.next(0); got < w/2 || got > w {
				t.Errorf("round %d, call %d: next = %v, want within [%v, %v]", round, i, got, w/2, w)
			}
		}
		b.reset()
	}
	if got := b.next(2 * time.Second); got < time.Second || got > 2*time.Second {
		t.Errorf("with retry 2s: next = %v, want within [1s, 2s]", got)
	}
	if got := b.next(time.Hour); got < 2500*time.Millisecond || got > 5*time.Second {
		t.Errorf("with retry 1h: next = %v, want within [2.5s, 5s]", got)
	}
}
