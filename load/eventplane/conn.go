package eventplane

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// conn is one connection to a NATS server, for publishing. Its reader
// goroutine answers the server's PINGs and notices the end of the
// connection; close ends it.
type conn struct {
	nc         net.Conn
	maxPayload int64
	timeout    time.Duration
	log        *slog.Logger

	wmu sync.Mutex // guards w and serializes writes
	w   *bufio.Writer

	done chan struct{} // closed when the reader has ended
	err  error         // why; set before done is closed
}

// dialFunc opens the TCP connection; net.Dialer's DialContext by default.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// dial connects to the server at u and completes the handshake: INFO,
// CONNECT, then PING answered by PONG, which proves the server accepted
// the credentials. Every step is bounded by timeout and by ctx.
func dial(ctx context.Context, dialer dialFunc, u *url.URL, timeout time.Duration, log *slog.Logger) (*conn, error) {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nc, err := dialer(dctx, "tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", u.Host, err)
	}
	// A cancelled ctx unblocks the handshake at once.
	stop := context.AfterFunc(dctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	_ = nc.SetDeadline(time.Now().Add(timeout))
	r := bufio.NewReaderSize(nc, 4096)
	c := &conn{nc: nc, timeout: timeout, log: log, w: bufio.NewWriterSize(nc, 32<<10), done: make(chan struct{})}
	if err := c.handshake(r, u); err != nil {
		nc.Close()
		return nil, fmt.Errorf("handshake with %s: %w", u.Host, err)
	}
	if !stop() {
		nc.Close()
		return nil, fmt.Errorf("handshake with %s: %w", u.Host, context.Cause(dctx))
	}
	_ = nc.SetDeadline(time.Time{})
	go c.readLoop(r)
	return c, nil
}

// handshake reads INFO, sends CONNECT and PING, and waits for PONG.
func (c *conn) handshake(r *bufio.Reader, u *url.URL) error {
	line, err := readLine(r)
	if err != nil {
		return err
	}
	op, arg, err := parseServerLine(line)
	if err != nil {
		return err
	}
	if op != "INFO" {
		return fmt.Errorf("%w: want INFO first, got %s", errProtocol, op)
	}
	info, err := parseInfo(arg)
	if err != nil {
		return err
	}
	if info.TLSRequired {
		return errors.New("the server requires TLS, which slotgate's NATS client does not speak")
	}
	c.maxPayload = info.MaxPayload
	if _, err := c.nc.Write(append(connectLine(u), "PING\r\n"...)); err != nil {
		return err
	}
	for {
		line, err := readLine(r)
		if err != nil {
			return err
		}
		op, arg, err := parseServerLine(line)
		switch {
		case err != nil:
			return err
		case op == "PONG":
			return nil
		case op == "-ERR":
			return fmt.Errorf("server: %s", errorText(arg))
		case op == "PING":
			if _, err := c.nc.Write([]byte("PONG\r\n")); err != nil {
				return err
			}
		}
	}
}

// readLine reads one CRLF-terminated line of at most maxLine bytes.
func readLine(r *bufio.Reader) (string, error) {
	var line []byte
	for {
		part, more, err := r.ReadLine()
		if err != nil {
			return "", err
		}
		line = append(line, part...)
		if len(line) > maxLine {
			return "", fmt.Errorf("%w: line longer than %d bytes", errProtocol, maxLine)
		}
		if !more {
			return string(line), nil
		}
	}
}

// readLoop answers PINGs and logs -ERRs until the connection ends, then
// records why and closes done.
func (c *conn) readLoop(r *bufio.Reader) {
	var serverErr string
	defer close(c.done)
	for {
		line, err := readLine(r)
		if err != nil {
			if serverErr != "" && errors.Is(err, io.EOF) {
				err = fmt.Errorf("closed by the server after -ERR %q", serverErr)
			}
			c.err = err
			return
		}
		op, arg, err := parseServerLine(line)
		switch {
		case err != nil:
			c.err = err
			c.nc.Close()
			return
		case op == "PING":
			if err := c.write([]byte("PONG\r\n"), true); err != nil {
				c.err = err
				return
			}
		case op == "-ERR":
			serverErr = errorText(arg)
			c.log.Warn("nats server error", slog.String("error", serverErr))
		}
	}
}

// publish buffers one PUB; flush sends it.
func (c *conn) publish(subject string, payload []byte) error {
	if c.maxPayload > 0 && int64(len(payload)) > c.maxPayload {
		return fmt.Errorf("message of %d bytes exceeds the server's max_payload %d", len(payload), c.maxPayload)
	}
	msg := make([]byte, 0, len(subject)+len(payload)+24)
	msg = append(append(append(msg, "PUB "...), subject...), ' ')
	msg = strconv.AppendInt(msg, int64(len(payload)), 10)
	msg = append(append(append(msg, "\r\n"...), payload...), "\r\n"...)
	return c.write(msg, false)
}

// flush sends what publish buffered, within the write timeout.
func (c *conn) flush() error { return c.write(nil, true) }

// write buffers p and, if flush, sends the buffer within the write
// timeout. An error closes the connection: a half-written message leaves
// the stream unusable.
func (c *conn) write(p []byte, flush bool) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	// A full buffer flushes inside Write: the deadline covers it too.
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.timeout))
	if _, err := c.w.Write(p); err != nil {
		c.nc.Close()
		return err
	}
	if !flush {
		return nil
	}
	if err := c.w.Flush(); err != nil {
		c.nc.Close()
		return err
	}
	return nil
}

// close ends the connection and waits for its reader.
func (c *conn) close() {
	c.nc.Close()
	<-c.done
}
