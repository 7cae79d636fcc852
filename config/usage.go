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
const usageIntro = "Usage: slotgate [flags]\n\n" +
	"slotgate is a sidecar reverse proxy that caps the requests reaching one inference engine:\n" +
	"N engine slots plus a FIFO queue of Q, and an immediate overload answer beyond N+Q.\n" +
	"Each flag may also be set by its environment variable; the flag wins.\n\n"
