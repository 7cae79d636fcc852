package command

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// Exit statuses of run.
const (
	exitOK     = 0
	exitFailed = 1
)

// idlePoll is how often shutdown checks whether admitted and queued
// requests have all finished.
const idlePoll = 20 * time.Millisecond

// run binds every port, serves until the drain ends or something fails,
// and returns the exit status.
func (a *app) run(signals <-chan os.Signal) int {
	ls, err := a.listen()
	if err != nil {
		a.log.Error("start-up failed", zap.Error(err))
		return exitFailed
	}
	return a.serveOn(ls, signals)
}

// serveOn serves on ls until the drain ends or something fails, and
// returns the exit status. It owns every goroutine it starts: the servers,
// the engine prober and the load parts, all ended before it returns (but
// the handlers of requests cut at the shutdown timeout, which Close does
// not wait for). After a second signal it returns at once: it closes the
// servers, cutting their connections, and ends the rest without waiting,
// since the process exits at once by design.
func (a *app) serveOn(ls listeners, signals <-chan os.Signal) int {
	a.log.Info("listening", zap.String("proxy", ls.proxy.Addr().String()), zap.String("admin", ls.admin.Addr().String()),
		zap.String("grpc", addrOrOff(ls.grpc)), zap.String("grpc_proxy", addrOrOff(ls.grpcProxy)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	serveErr := make(chan error, 4)
	proxyLn := newStrictListener(ls.proxy, a.proxyServer, a.frontEnd())
	a.stopEarly = proxyLn.stopEarly
	wg.Go(func() { serveErr <- serve(a.proxyServer, proxyLn) })
	wg.Go(func() { serveErr <- serve(a.adminServer, ls.admin) })
	if ls.grpc != nil {
		wg.Go(func() { serveErr <- a.load.serveGRPC(ctx, ls.grpc, a.drain.begun) })
	}
	if ls.grpcProxy != nil {
		wg.Go(func() { serveErr <- a.grpc.serveListen(ls.grpcProxy, a.drain.begun) })
	}
	if a.relay != nil {
		wg.Go(func() { a.relay.Run(ctx) })
	}
	wg.Go(func() { _ = a.prober.Run(ctx) })
	wg.Go(func() { a.load.run(ctx) })
	wg.Go(func() { runEventPlane(ctx, a.cfg, a.load.hub, a.log) })
	code, now := a.await(signals, serveErr)
	a.adminServer.Close()
	a.proxyServer.Close()
	a.grpc.stopNow()
	cancel()
	if !now {
		wg.Wait()
		a.engine.Close() // every answer is closed: no connection is in use
		a.grpc.close()
	}
	return code
}

// addrOrOff is a listener's address for the log, "off" without one.
func addrOrOff(ln net.Listener) string {
	if ln == nil {
		return "off"
	}
	return ln.Addr().String()
}

// serveGRPC runs srv on ln; it returns nil once the server was stopped.
func serveGRPC(srv *grpc.Server, ln net.Listener) error {
	if err := srv.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("gRPC proxy: %w", err)
	}
	return nil
}

// serve runs srv on ln; it returns nil once the server was shut down.
func serve(srv *http.Server, ln net.Listener) error {
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// await runs the drain: a signal or POST /drain fails readiness at once;
// new requests are still served for the drain delay, while endpoints
// update, each answer closing its connection (drainer.closeConns); then
// they are refused with 503 draining. After a signal, once
// refusing, it waits for admitted and queued requests to finish. A second
// signal ends everything at once (now is then true).
func (a *app) await(signals <-chan os.Signal, serveErr <-chan error) (code int, now bool) {
	begun := a.drain.begun
	var delayOver <-chan time.Time
	terminating, refusing := false, false
	for !(terminating && refusing) {
		select {
		case err := <-serveErr:
			if err != nil {
				a.log.Error("server failed", zap.Error(err))
				return exitFailed, false
			}
		case <-begun:
			begun = nil
			delayOver = time.After(a.cfg.DrainDelay)
		case <-delayOver:
			delayOver, refusing = nil, true
			a.proxy.StartDraining()
			a.log.Info("draining: new requests are now refused with 503")
		case sig := <-signals:
			if terminating {
				a.log.Warn("second signal: exiting now", zap.String("signal", sig.String()))
				return exitFailed, true
			}
			terminating = true
			a.log.Info("signal received: draining", zap.String("signal", sig.String()))
			a.drain.start()
		}
	}
	return a.shutdown(signals)
}

// shutdown waits, within --shutdown-timeout, for every admitted and queued
// request to finish and every relayed answer to reach its client, then
// closes the proxy's listener and waits for the last responses to be
// written.
func (a *app) shutdown(signals <-chan os.Signal) (code int, now bool) {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	tick := time.NewTicker(idlePoll)
	defer tick.Stop()
	for s := a.lims.Stats(); s.Holding+s.Waiting+a.proxy.Resuming()+a.relayed() > 0; s = a.lims.Stats() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			a.log.Error("shutdown timeout: cutting requests still running",
				zap.Int("holding", s.Holding), zap.Int("waiting", s.Waiting), zap.Int("relayed", a.relayed()))
			return exitFailed, false
		case sig := <-signals:
			a.log.Warn("second signal: exiting now", zap.String("signal", sig.String()))
			return exitFailed, true
		}
	}
	a.stopEarly()
	done := make(chan error, 1)
	go func() { done <- a.proxyServer.Shutdown(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			a.log.Error("shutdown timeout: cutting connections still open", zap.Error(err))
			return exitFailed, false
		}
	case sig := <-signals:
		a.log.Warn("second signal: exiting now", zap.String("signal", sig.String()))
		return exitFailed, true
	}
	// The calls that took a slot ended above, and the streams that take
	// none (health, ORCA reports) ended when the drain began; a
	// passthrough call (reflection) may still run, until ctx ends.
	a.grpc.stop(ctx)
	a.log.Info("drained: exiting")
	return exitOK, false
}

// frontEnd is what answers requests before net/http reads them: the
// proxy, or nothing with --front-end=false.
func (a *app) frontEnd() earlyAnswerer {
	if !a.cfg.FrontEnd {
		return nil
	}
	return a.proxy
}

// relayed is the number of answers the stream relay still carries. An
// answer's slot goes back as the relay reads the engine's end
// (gate.EngineFinished), before the client has taken it: a slow client's
// last bytes may still be on their way, and the relay's stop would cut
// them.
func (a *app) relayed() int {
	if a.relay == nil {
		return 0
	}
	return a.relay.Open()
}
