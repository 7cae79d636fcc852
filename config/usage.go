package config

import (
	"io"

	"github.com/slotgate/slotgate/internal/flagenv"
)

// Usage writes the --help text: every flag with its environment variable,
// default and meaning.
func Usage(w io.Writer) {
	var r raw
	// A failed write of --help leaves nothing better to do than exit.
	_ = flagenv.WriteUsage(w, usageIntro, flagenv.MustSettings(&r), flagenv.VersionRow())
}

// usageIntro opens the --help text.
const usageIntro = "Usage: slotgate [flags]\n" +
	"       slotgate drain [flags]   ask the slotgate these flags and variables describe to drain\n" +
	"                                (POST /drain on its admin port, with its admin token): a preStop hook\n\n" +
	"slotgate is a sidecar reverse proxy that caps the requests reaching one inference engine,\n" +
	"as Dynamo's backend admission gate does: a request is admitted while fewer than N admitted\n" +
	"requests are unfinished and fewer than W are waiting for their first token; otherwise it\n" +
	"waits in a FIFO queue of Q, and beyond that gets the overload answer at once. With neither\n" +
	"N nor W set, slotgate is a pure pass-through.\n" +
	"Each flag may also be set by its environment variable, or by the other names listed under\n" +
	"it; the flag wins, then the first name set.\n\n"
