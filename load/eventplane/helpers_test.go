package eventplane

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotgate/slotgate/load/report"
)

// message is one PUB the fake server received, decoded.
type message struct {
	at      time.Time
	subject string
	env     map[string]any
	load    map[string]any
}

func (m message) rank() uint64 { return m.load["dp_rank"].(uint64) }
func (m message) kv() uint64   { return m.load["kv_used_blocks"].(uint64) }
func (m message) seq() uint64  { return m.env["sequence"].(uint64) }

// fakeServer speaks the server side of NATS over net.Pipe, for the tests
// that need synctest's clock; the real server is exercised in interop.
type fakeServer struct {
	t      *testing.T
	msgs   chan message
	mu     sync.Mutex
	dials  int
	reject int  // the first reject handshakes are refused with -ERR
	down   bool // dials fail, as with no server listening
	conns  []net.Conn
}

func newFakeServer(t *testing.T) *fakeServer {
	return &fakeServer{t: t, msgs: make(chan message, 100)}
}

// dial is Options.Dial: each call starts a server goroutine on a pipe.
func (f *fakeServer) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	f.mu.Lock()
	if f.down {
		f.mu.Unlock()
		return nil, errors.New("connection refused")
	}
	client, server := net.Pipe()
	f.dials++
	refuse := f.dials <= f.reject
	f.conns = append(f.conns, server)
	f.mu.Unlock()
	go f.serve(server, refuse)
	return client, nil
}

// setDown stops (or restarts) the server: stopping closes every
// connection and makes dials fail.
func (f *fakeServer) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
	if !down {
		return
	}
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

func (f *fakeServer) serve(c net.Conn, refuse bool) {
	defer c.Close()
	if _, err := io.WriteString(c, `INFO {"server_id":"fake","max_payload":1048576}`+"\r\n"); err != nil {
		return
	}
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		switch op, arg, _ := strings.Cut(line, " "); op {
		case "CONNECT":
			if !strings.Contains(arg, `"name":"slotgate"`) || !strings.Contains(arg, `"verbose":false`) {
				f.t.Errorf("CONNECT %s", arg)
			}
			if refuse {
				io.WriteString(c, "-ERR 'Authorization Violation'\r\n")
				return
			}
		case "PING":
			io.WriteString(c, "PONG\r\n")
		case "PUB":
			f.readPub(r, arg)
		default:
			f.t.Errorf("unexpected line %q", line)
		}
	}
}

func (f *fakeServer) readPub(r *bufio.Reader, arg string) {
	subject, size, _ := strings.Cut(arg, " ")
	n, err := strconv.Atoi(size)
	if err != nil {
		f.t.Errorf("PUB %s: %v", arg, err)
		return
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(r, body); err != nil {
		return
	}
	env, err := decodeMap(body[:n])
	if err != nil {
		f.t.Errorf("envelope: %v", err)
		return
	}
	load, err := decodeMap(env["payload"].([]byte))
	if err != nil {
		f.t.Errorf("payload: %v", err)
		return
	}
	f.msgs <- message{at: time.Now(), subject: subject, env: env, load: load}
}

// decodeMap decodes a MessagePack map of str keys to uint, str or bin
// values, what the package sends; anything else is an error.
func decodeMap(b []byte) (map[string]any, error) {
	if len(b) == 0 || b[0]&0xf0 != 0x80 {
		return nil, errors.New("not a fixmap")
	}
	n, b := int(b[0]&0x0f), b[1:]
	out := map[string]any{}
	for range n {
		if len(b) == 0 || b[0]&0xe0 != 0xa0 || len(b) < 1+int(b[0]&0x1f) {
			return nil, errors.New("key is not a fixstr")
		}
		kl := int(b[0] & 0x1f)
		key := string(b[1 : 1+kl])
		b = b[1+kl:]
		v, rest, err := decodeValue(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out[key], b = v, rest
	}
	if len(b) != 0 {
		return nil, errors.New("trailing bytes")
	}
	return out, nil
}

func decodeValue(b []byte) (any, []byte, error) {
	if len(b) == 0 {
		return nil, nil, io.ErrUnexpectedEOF
	}
	need := func(n int) error {
		if len(b) < n {
			return io.ErrUnexpectedEOF
		}
		return nil
	}
	switch c := b[0]; {
	case c < 0x80:
		return uint64(c), b[1:], nil
	case c&0xe0 == 0xa0:
		n := int(c & 0x1f)
		if err := need(1 + n); err != nil {
			return nil, nil, err
		}
		return string(b[1 : 1+n]), b[1+n:], nil
	case c == 0xc4:
		if err := need(2); err != nil {
			return nil, nil, err
		}
		n := int(b[1])
		if err := need(2 + n); err != nil {
			return nil, nil, err
		}
		return b[2 : 2+n], b[2+n:], nil
	case c == 0xcc:
		if err := need(2); err != nil {
			return nil, nil, err
		}
		return uint64(b[1]), b[2:], nil
	case c == 0xcd:
		if err := need(3); err != nil {
			return nil, nil, err
		}
		return uint64(binary.BigEndian.Uint16(b[1:])), b[3:], nil
	case c == 0xce:
		if err := need(5); err != nil {
			return nil, nil, err
		}
		return uint64(binary.BigEndian.Uint32(b[1:])), b[5:], nil
	case c == 0xcf:
		if err := need(9); err != nil {
			return nil, nil, err
		}
		return binary.BigEndian.Uint64(b[1:]), b[9:], nil
	}
	return nil, nil, fmt.Errorf("unsupported type byte %#x", b[0])
}

// load is a controllable source of snapshots for a Hub.
type load struct {
	mu    sync.Mutex
	ranks []report.Rank
}

// set sets rank r's kv_used_blocks; a negative kv makes it unknown.
func (l *load) set(r int, kv int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.ranks) <= r {
		l.ranks = append(l.ranks, report.Rank{DPRank: len(l.ranks)})
	}
	l.ranks[r].KVUsedBlocks = report.Field{}
	if kv >= 0 {
		l.ranks[r].KVUsedBlocks = report.Field{N: kv, Source: report.SourceEngine}
	}
}

func (l *load) compute() report.Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return report.Snapshot{Ranks: append([]report.Rank(nil), l.ranks...)}
}
