// Command slotgate is a sidecar reverse proxy that caps the requests reaching
// one inference engine: N engine slots, a FIFO overflow queue of Q, and an
// immediate overload answer beyond N+Q. See the README for its settings.
//
// Everything but the version stamp is in package command, which a custom
// build imports to register its own admission classifiers
// (examples/custom-classifier).
package main

import (
	"os"

	"github.com/slotgate/slotgate/command"
)

// Set with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

func main() {
	os.Exit(command.Main(command.Options{Version: version, Commit: commit}))
}
