package config

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Usage writes the --help text: every flag with its environment variable,
// default and meaning.
func Usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: slotgate [flags]\n\n"+
		"slotgate is a sidecar reverse proxy that caps the requests reaching one inference engine:\n"+
		"N engine slots plus a FIFO queue of Q, and an immediate overload answer beyond N+Q.\n"+
		"Each flag may also be set by its environment variable; the flag wins.\n\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FLAG\tENVIRONMENT\tDEFAULT\tMEANING")
	var r raw
	for _, s := range settings(&r) {
		def := s.def
		if def == "" {
			def = "(unset)"
		}
		fmt.Fprintf(tw, "--%s\t%s\t%s\t%s\n", s.flag, s.env, def, s.usage)
	}
	fmt.Fprintln(tw, "--version\t\t\tprint the version and exit")
	tw.Flush()
}
