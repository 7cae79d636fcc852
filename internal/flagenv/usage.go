package flagenv

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteUsage writes the --help text: intro as given, then a table with a
// header, one row per setting of list with its flag, variable, default
// ("(unset)" when none) and meaning, and the extra rows, such as
// --version, as given. Columns are aligned with two spaces between them.
// Each alias of a setting follows its row on a line of its own, under the
// variable, as "or NAME (note)"; these lines leave the columns' widths as
// the rows make them.
func WriteUsage(w io.Writer, intro string, list []Setting, extra ...Setting) error {
	if _, err := io.WriteString(w, intro); err != nil {
		return fmt.Errorf("write usage: %w", err)
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
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
	// Line 0 is the header and line i+1 the row of the setting i (no
	// setting's text holds a newline). The aliases go in after the table
	// is aligned, so that they do not widen the variable's column.
	rows := strings.SplitAfter(b.String(), "\n")
	indent := strings.Repeat(" ", strings.Index(rows[0], "ENVIRONMENT"))
	var out strings.Builder
	for i, row := range rows {
		out.WriteString(row)
		if i == 0 || i > len(list) {
			continue
		}
		for _, a := range list[i-1].Aliases {
			out.WriteString(indent + a.describe() + "\n")
		}
	}
	if _, err := io.WriteString(w, out.String()); err != nil {
		return fmt.Errorf("write usage: %w", err)
	}
	return nil
}

func writeRow(w io.Writer, s Setting) {
	fmt.Fprintf(w, "--%s\t%s\t%s\t%s\n", s.Flag, s.Env, s.Default, s.Usage)
}

// describe is how --help names an alias.
func (a Alias) describe() string {
	if a.Note == "" {
		return "or " + a.Name
	}
	return "or " + a.Name + " (" + a.Note + ")"
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
