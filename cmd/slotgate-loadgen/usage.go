package main

import (
	"io"

	"github.com/slotgate/slotgate/internal/flagenv"
)

// usage writes the --help text: every flag with its environment variable,
// default and meaning.
func usage(w io.Writer) {
	var r raw
	// A failed write of --help leaves nothing better to do than exit.
	_ = flagenv.WriteUsage(w, usageIntro, flagenv.MustSettings(&r), flagenv.VersionRow())
}

// usageIntro opens the --help text.
const usageIntro = "Usage: slotgate-loadgen [flags]\n\n" +
	"slotgate-loadgen sends OpenAI-style completion requests (with --grpc, vLLM's gRPC Generate calls)\n" +
	"to slotgate or to an engine and reports status counts, time to first token, inter-token latency,\n" +
	"end-to-end latency and throughput.\n" +
	"Each flag may also be set by its environment variable; the flag wins.\n\n"
