package router

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// hopHeaders are connection-scoped (RFC 9110 §7.6.1): never forwarded.
var hopHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// ServeHTTP routes one request: it picks a worker, forwards, and retries
// a 529 or a transport error on another worker while the body can be
// replayed and nothing was written to the client.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.counters.requests.Add(1)
	body, err := r.readBody(req)
	if err != nil {
		http.Error(w, "frontend: read the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	tried := make(map[string]bool, len(r.workers))
	retrying529 := false // the previous attempt was a worker's 529
	for attempt := 0; ; attempt++ {
		ws, err := r.pick(tried)
		if err != nil {
			r.refuse(w, err)
			return
		}
		// A retry counts once it has a worker to go to: a 529 followed by
		// the frontend's own 529 was not absorbed.
		if attempt > 0 {
			r.counters.retries.Add(1)
			if retrying529 {
				r.counters.absorbed529.Add(1)
			}
		}
		tried[ws.Name] = true
		resp, err := r.send(req, ws, body)
		retry := body.replayable() && attempt < r.retries && req.Context().Err() == nil
		retrying529 = false
		switch {
		case err != nil && retry:
			r.log.Debug("retry after a transport error", "worker", ws.Name, "err", err)
			continue
		case err != nil:
			http.Error(w, "frontend: worker "+ws.Name+": "+err.Error(), http.StatusBadGateway)
			return
		case resp.StatusCode == StatusOverloaded:
			ws.got529.Add(1)
			r.counters.worker529.Add(1)
			if r.policy == PolicyLoad {
				r.marks.mark(ws.Name, time.Now())
			}
			if retry {
				discard(resp)
				retrying529 = true
				continue
			}
			r.counters.client529.Add(1)
		}
		r.relay(w, resp)
		return
	}
}

// requestBody is a request's body: kept whole for retries, or, when too
// large to keep, a stream that one attempt consumes.
type requestBody struct {
	kept   []byte    // nil for no body, or when streamed
	stream io.Reader // non-nil when the body was too large to keep
}

func (b requestBody) replayable() bool { return b.stream == nil }

// reader returns a fresh reader for one attempt; nil for no body.
func (b requestBody) reader() io.Reader {
	switch {
	case b.stream != nil:
		return b.stream
	case b.kept != nil:
		return bytes.NewReader(b.kept)
	}
	return nil
}

// readBody keeps the body for retries when it is at most maxReplay bytes.
// A larger one is handed on as a stream, once: not replayable.
func (r *Router) readBody(req *http.Request) (requestBody, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return requestBody{}, nil
	}
	head, err := io.ReadAll(io.LimitReader(req.Body, r.maxReplay+1))
	if err != nil {
		return requestBody{}, err
	}
	if int64(len(head)) <= r.maxReplay {
		return requestBody{kept: head}, nil
	}
	return requestBody{stream: io.MultiReader(bytes.NewReader(head), req.Body)}, nil
}

// send sends one attempt to ws; its in-flight count covers the request
// until relay or discard closes the answer.
func (r *Router) send(req *http.Request, ws *workerState, body requestBody) (*http.Response, error) {
	out, err := outgoing(req, ws, body)
	if err != nil {
		return nil, err
	}
	ws.sent.Add(1)
	ws.inFlight.Add(1)
	resp, err := r.client.Do(out)
	if err != nil {
		ws.inFlight.Add(-1)
		return nil, fmt.Errorf("send to %s: %w", ws.Name, err)
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, ws: ws}
	return resp, nil
}

// outgoing is req addressed to ws, with body and no hop-by-hop headers.
func outgoing(req *http.Request, ws *workerState, body requestBody) (*http.Request, error) {
	target, err := url.Parse(ws.Proxy)
	if err != nil {
		return nil, fmt.Errorf("worker %s proxy URL: %w", ws.Name, err)
	}
	target = target.JoinPath(req.URL.Path)
	target.RawQuery = req.URL.RawQuery
	out, err := http.NewRequestWithContext(req.Context(), req.Method, target.String(), body.reader())
	if err != nil {
		return nil, err
	}
	out.Header = req.Header.Clone()
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	if body.stream != nil {
		// A streamed body keeps the length its client declared.
		out.ContentLength = req.ContentLength
	}
	return out, nil
}

// relay writes the worker's answer to the client, flushing after every
// chunk read so that a stream's events pass as they come.
func (r *Router) relay(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return // the client left; closing the body cancels the worker's request
			}
			_ = rc.Flush()
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
				r.log.Debug("answer cut short", "err", err)
			}
			return
		}
	}
}

// discard drops a refused attempt's answer, reading a little of it so the
// connection can be reused.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// countedBody ends its worker's in-flight count once, when closed.
type countedBody struct {
	io.ReadCloser
	ws     *workerState
	closed bool
}

func (b *countedBody) Close() error {
	if !b.closed {
		b.closed = true
		b.ws.inFlight.Add(-1)
	}
	return b.ReadCloser.Close()
}
