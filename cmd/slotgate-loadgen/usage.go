package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// usage writes the --help text: every flag with its environment variable,
// default and meaning.
func usage(w io.Writer) {
	fmt.Fprint(w, "Usage: slotgate-loadgen [flags]\n\n"+
		"slotgate-loadgen sends OpenAI-style completion requests to slotgate or to an engine and reports\n"+
		"status counts, time to first token, inter-token latency, end-to-end latency and throughput.\n"+
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
	_ = tw.Flush()
}
