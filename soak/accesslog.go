package soak

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// readAccessLog reads the access-log lines of slotgate's output at path:
// the JSON lines of the slotgate.access logger with msg "request".
func readAccessLog(path string) ([]LogEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseAccessLog(f)
}

func parseAccessLog(r io.Reader) ([]LogEntry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var out []LogEntry
	marker := []byte(`"logger":"slotgate.access"`)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if !bytes.Contains(line, marker) {
			continue
		}
		var e struct {
			Msg string `json:"msg"`
			LogEntry
		}
		if err := json.Unmarshal(line, &e); err != nil {
			return out, fmt.Errorf("soak: access log line %d %q: %w", n, line, err)
		}
		if e.Msg == "request" {
			out = append(out, e.LogEntry)
		}
	}
	return out, sc.Err()
}
