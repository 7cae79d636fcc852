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
package command
