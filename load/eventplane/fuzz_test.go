package eventplane

import (
	"bufio"
	"strings"
	"testing"
)

// FuzzServerLine feeds the reader of the server's lines: parseServerLine,
// then parseInfo for an INFO. Neither may panic, and an accepted line has
// a known operation.
func FuzzServerLine(f *testing.F) {
	for _, s := range []string{
		`INFO {"server_id":"x","max_payload":1048576,"tls_required":false}`, "PING", "PONG", "+OK",
		"-ERR 'Authorization Violation'", "MSG a 1 2", "info {}", "INFO {\"max_payload\":-1}", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line, err := readLine(bufio.NewReader(strings.NewReader(s + "\r\n")))
		if err != nil {
			return
		}
		op, arg, err := parseServerLine(line)
		if err != nil {
			return
		}
		switch op {
		case "INFO":
			if info, err := parseInfo(arg); err == nil && info.MaxPayload < 0 {
				t.Errorf("parseInfo(%q) accepted a negative max_payload", arg)
			}
		case "PING", "PONG", "+OK":
			if arg != "" {
				t.Errorf("%s with argument %q accepted", op, arg)
			}
		case "-ERR":
		default:
			t.Errorf("parseServerLine(%q) accepted operation %q", line, op)
		}
	})
}
