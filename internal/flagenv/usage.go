package flagenv

import (
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteUsage writes the --help text: intro as given, then a table with a
// header, one row per setting of list with its flag, variable, default
// ("(unset)" when none) and meaning, and the extra rows, such as
// --version, as given. Columns are aligned with two spaces between them.
func WriteUsage(w io.Writer, intro string, list []Setting, extra ...Setting) error {
	if _, err := io.WriteString(w, intro); err != nil {
		return fmt.Errorf("write usage: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FLAG\tENVIRONMENT\tDEFAULT\tMEANING")
	for _, s := range list {
		if s.Default == "" {
			s.Default = "(unset)"
		}
		writeRow(tw, s)
	}
	for _, s := range extra {
		writeRow(tw, s)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write usage: %w", err)
	}
	return nil
}

func writeRow(w io.Writer, s Setting) {
	fmt.Fprintf(w, "--%s\t%s\t%s\t%s\n", s.Flag, s.Env, s.Default, s.Usage)
}

// The --version switch of slotgate and slotgate-loadgen: a flag with no
// variable and no default, so it is registered apart from the settings.
const (
	versionFlag  = "version"
	versionUsage = "print the version and exit"
)

// AddVersion registers --version on fs, to set *p; call it before Parse.
func AddVersion(fs *flag.FlagSet, p *bool) {
	fs.BoolVar(p, versionFlag, false, versionUsage)
}

// VersionRow is the usage row of --version, for WriteUsage's extra rows.
func VersionRow() Setting {
	return Setting{Flag: versionFlag, Usage: versionUsage}
}
