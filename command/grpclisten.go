package command

import (
	"errors"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// drainConnAge is how long a connection to --grpc-listen made during a
// drain lives before its GOAWAY: long enough for the calls a client
// sends before its endpoints update, short enough that it then connects
// through the updated ones. It is the gRPC counterpart of the HTTP
// answers' Connection: close during a drain.
const drainConnAge = time.Second

// serveListen serves --grpc-listen on ln until the servers are stopped
// (stop, stopNow). When the drain begins, the server that took the
// connections until then stops gracefully: grpc-go sends each of its
// connections a GOAWAY, their calls in flight go on to their end, and the
// clients' next calls go over new connections, through the updated
// endpoints. Those that still reach this pod during the drain delay are
// served by a second server that sends GOAWAY to each connection
// drainConnAge after it opened, its calls left to end however long they
// take. grpc-go has no call that sends GOAWAY and keeps serving: so the
// servers take turns on ln, which stays open throughout.
func (gp *grpcParts) serveListen(ln net.Listener, begun <-chan struct{}) error {
	feed := newConnFeed(ln)
	defer feed.close()
	before := gp.listenServer()
	served := make(chan error, 1)
	go func() { served <- serveGRPC(before, feed.view()) }()
	select {
	case err := <-served:
		return err // stopped before any drain, or failed
	case <-begun:
	}
	during := gp.listenServer(grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: drainConnAge}))
	var wg sync.WaitGroup
	wg.Go(before.GracefulStop) // returns once its calls ended, or at stop
	err := serveGRPC(during, feed.view())
	wg.Wait()
	return errors.Join(<-served, err)
}

// listenServer makes a server for --grpc-listen, stopped at once when the
// servers' stop began.
func (gp *grpcParts) listenServer(more ...grpc.ServerOption) *grpc.Server {
	srv := gp.build(more...)
	gp.mu.Lock()
	defer gp.mu.Unlock()
	gp.listen = append(gp.listen, srv)
	if gp.stopped {
		srv.Stop() // its Serve returns at once
	}
	return srv
}

// connFeed accepts connections on a listener for servers that take turns
// on it: each takes them through a view, whose Close ends that server's
// Accept and leaves the listener open for the next. A connection accepted
// goes to whichever view asks first.
type connFeed struct {
	ln    net.Listener
	conns chan accepted
	quit  chan struct{} // closed by close: the connection in hand is closed
	done  chan struct{} // closed when accepting ended
	err   error         // why accepting ended; read after done
	wg    sync.WaitGroup
}

// accepted is what one Accept returned.
type accepted struct {
	conn net.Conn
	err  error
}

func newConnFeed(ln net.Listener) *connFeed {
	f := &connFeed{ln: ln, conns: make(chan accepted), quit: make(chan struct{}), done: make(chan struct{})}
	f.wg.Go(f.accept)
	return f
}

// accept hands each connection to a view until the listener fails for
// good; a temporary error goes to the view too, which retries as
// grpc-go's Serve does.
func (f *connFeed) accept() {
	defer close(f.done)
	for {
		c, err := f.ln.Accept()
		var te interface{ Temporary() bool }
		if err != nil && !(errors.As(err, &te) && te.Temporary()) {
			f.err = err
			return
		}
		select {
		case f.conns <- accepted{c, err}:
		case <-f.quit:
			if c != nil {
				_ = c.Close()
			}
			f.err = net.ErrClosed // a view's Accept never returns no connection and no error
			return
		}
	}
}

// close closes the listener and waits for accept to end.
func (f *connFeed) close() {
	close(f.quit)
	_ = f.ln.Close()
	f.wg.Wait()
}

// view is a listener for one server of the feed's.
func (f *connFeed) view() net.Listener {
	return &feedView{f: f, closed: make(chan struct{})}
}

// feedView is one server's listener over a connFeed.
type feedView struct {
	f      *connFeed
	closed chan struct{}
	once   sync.Once
}

func (v *feedView) Accept() (net.Conn, error) {
	select {
	case <-v.closed: // before a connection the next server would take
		return nil, net.ErrClosed
	default:
	}
	select {
	case a := <-v.f.conns:
		return a.conn, a.err
	case <-v.closed:
		return nil, net.ErrClosed
	case <-v.f.done:
		return nil, v.f.err
	}
}

// Close ends this view's Accept; the listener stays open.
func (v *feedView) Close() error {
	v.once.Do(func() { close(v.closed) })
	return nil
}

func (v *feedView) Addr() net.Addr { return v.f.ln.Addr() }
