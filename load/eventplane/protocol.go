package eventplane

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// NATS's client protocol is text (https://docs.nats.io/reference/reference-protocols/nats-protocol):
// the server opens with INFO {json}; the client answers CONNECT {json};
// PUB <subject> <#bytes> then the payload send a message; PING and PONG
// keep the connection alive both ways; +OK acknowledges in verbose mode
// and -ERR '<message>' reports an error, after which the server may close
// the connection.

// maxLine bounds a line from the server. An INFO with connect_urls of a
// large cluster stays far below it.
const maxLine = 64 << 10

// serverInfo is what slotgate reads of the server's INFO.
type serverInfo struct {
	MaxPayload   int64 `json:"max_payload"`
	TLSRequired  bool  `json:"tls_required"`
	AuthRequired bool  `json:"auth_required"`
}

// errProtocol is wrapped by every error about what the server sent.
var errProtocol = errors.New("nats protocol")

// parseServerLine splits a line from the server, without its CRLF, into
// its operation, upper-cased, and the rest. It accepts the operations a
// publish-only client can get: INFO, PING, PONG, +OK and -ERR.
func parseServerLine(line string) (op, arg string, err error) {
	op, arg, _ = strings.Cut(line, " ")
	op = strings.ToUpper(strings.TrimSpace(op))
	arg = strings.TrimSpace(arg)
	switch op {
	case "INFO", "-ERR":
		return op, arg, nil
	case "PING", "PONG", "+OK":
		if arg != "" {
			return "", "", fmt.Errorf("%w: %s takes no argument, got %q", errProtocol, op, line)
		}
		return op, "", nil
	}
	return "", "", fmt.Errorf("%w: unexpected line %q", errProtocol, truncate(line))
}

// parseInfo reads INFO's JSON argument.
func parseInfo(arg string) (serverInfo, error) {
	var info serverInfo
	if err := json.Unmarshal([]byte(arg), &info); err != nil {
		return serverInfo{}, fmt.Errorf("%w: INFO: %w", errProtocol, err)
	}
	if info.MaxPayload < 0 {
		return serverInfo{}, fmt.Errorf("%w: INFO: negative max_payload %d", errProtocol, info.MaxPayload)
	}
	return info, nil
}

// errorText is -ERR's message without the quotes the server puts around it.
func errorText(arg string) string {
	return strings.Trim(arg, "'")
}

// truncate shortens what the server sent for an error message.
func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// connectOptions is the CONNECT message of a publish-only client.
type connectOptions struct {
	Verbose  bool   `json:"verbose"`
	Pedantic bool   `json:"pedantic"`
	Name     string `json:"name"`
	Lang     string `json:"lang"`
	Version  string `json:"version"`
	Protocol int    `json:"protocol"`
	User     string `json:"user,omitempty"`
	Pass     string `json:"pass,omitempty"`
	Token    string `json:"auth_token,omitempty"`
}

// connectLine is CONNECT with the credentials of u: user and password, or a
// token given as the user alone (nats://token@host:port), as NATS's
// clients read such URLs.
func connectLine(u *url.URL) []byte {
	o := connectOptions{Name: "slotgate", Lang: "go", Version: "slotgate", Protocol: 1}
	if u.User != nil {
		if pass, ok := u.User.Password(); ok {
			o.User, o.Pass = u.User.Username(), pass
		} else {
			o.Token = u.User.Username()
		}
	}
	b, _ := json.Marshal(o) // a struct of strings, bools and an int cannot fail
	return append(append([]byte("CONNECT "), b...), "\r\n"...)
}

// ParseURL checks a NATS server URL, nats://[user:pass@]host:port or
// nats://token@host:port. TLS (tls://) is not supported.
func ParseURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("nats url: %w", err)
	}
	if u.Scheme != "nats" {
		return nil, fmt.Errorf("nats url %q: the scheme must be nats://", s)
	}
	if u.Hostname() == "" || u.Port() == "" {
		return nil, fmt.Errorf("nats url %q: want nats://host:port", s)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("nats url %q: want nats://[user:pass@]host:port, nothing after the port", s)
	}
	return u, nil
}
