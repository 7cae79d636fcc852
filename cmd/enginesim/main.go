// Command enginesim is a simulated LLM inference engine: an
// OpenAI-compatible server with vLLM's scheduler (max-num-seqs, a paged KV
// cache, chunked prefill, preemption), Dynamo mocker's step times and the
// load metrics of vLLM, SGLang or TensorRT-LLM, and no GPU; with
// --grpc-listen, vLLM's gRPC Generate too, on the same engine. It lets
// slotgate be tried, tested and benchmarked anywhere. Run it with --help
// for its settings.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/slotgate/slotgate/internal/flagenv"
	"github.com/slotgate/slotgate/internal/logging"
)

// Exit statuses of run.
const (
	exitOK     = 0
	exitFailed = 1
	exitConfig = 2
)

func main() {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	os.Exit(run(os.Args[1:], flagenv.Environ(os.Environ()), os.Stdout, os.Stderr, signals))
}

// run is the whole program; it returns the exit status: 0 after a graceful
// shutdown, 1 when serving failed, 2 when the configuration was refused.
func run(args []string, env map[string]string, stdout, stderr io.Writer, signals <-chan os.Signal) int {
	cfg, err := Load(args, env)
	switch {
	case errors.Is(err, flag.ErrHelp):
		Usage(stdout)
		return exitOK
	case err != nil:
		flagenv.Report(stderr, "enginesim", err)
		return exitConfig
	}
	log, err := logging.New("enginesim", cfg.LogLevel, cfg.LogFormat, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "enginesim: "+err.Error())
		return exitConfig
	}
	defer func() { _ = log.Sync() }()
	logConfig(log, cfg)
	return serve(cfg, log, signals)
}
