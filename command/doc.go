// Package command is the slotgate program: it reads the configuration,
// builds every part, serves until drained, and returns the exit status.
// cmd/slotgate is a three-line main around it; a custom build imports it
// to register its own admission classifiers before calling Main:
//
//	reg := command.NewRegistry()
//	_ = reg.Register("acme-queue-budget", provider)
//	os.Exit(command.Main(command.Options{Registry: reg}))
//
// The wiring is in app.go: one limiter, one gate (the admission every
// protocol goes through), one engine client shared by the proxy, the
// health prober and the load scraper, and the load parts. It owns every
// goroutine it starts: the servers, the engine prober, the
// load scraper and publisher, all ended before Run returns (but after a
// second signal, when the process exits at once by design).
//
// The proxy port's listener (strict.go) frames every HTTP/1.x request on
// its raw bytes before net/http reads it, refuses the shapes a server and
// a proxy may read differently, and (strict_early.go, unless
// --front-end=false) offers each plain request it holds whole to the
// proxy's front end, which refuses or serves it inside net/http's read of
// the connection, on that connection's goroutine. A connection's answers
// stay in order: a request is offered only when net/http owes the
// connection nothing. A served request's client watch (strict_watch.go)
// runs on the goroutine of its connection's one timer, armed per request,
// and is stopped and waited for before the answer is written; a fire too
// late for its request starts nothing, or the connection's next
// request's watch. The listener's connections read and write
// their sockets raw (internal/rawio.Socket), as net.Conn would, waiting
// in the same netpoller under the same deadlines: they are most of the
// proxy's system calls, and a raw call leaves the scheduler and sysmon
// nothing to do. A connection whose answer the stream relay carries
// lends it its socket (MoveOut, MoveIn: out of Go's netpoller for the
// stream) and works the socket given back, the same connection value
// for net/http to serve again.
package command
