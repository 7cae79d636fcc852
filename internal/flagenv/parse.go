package flagenv

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Source values besides a variable's name.
const (
	SourceFlag    = "flag"
	SourceDefault = "default"
)

// Parse fills raw (see Settings) from environ, then from args, registering
// one flag per field on fs; the caller may register flags of its own, such
// as --version, beforehand. fs is silenced: problems are returned, not
// printed. args exclude the program name; a nil environ is empty.
//
// A setting's value is its flag's, else that of the first of its variables
// (Env, then each alias in order) set to anything but "", else its default.
// Parse returns each flag's source: "flag", the name of the variable that
// gave the value, or "default". It returns flag.ErrHelp unchanged for -h or
// --help, and an error for a bad struct, an unknown flag or a stray
// argument; values are not checked here.
func Parse(fs *flag.FlagSet, raw any, args []string, environ map[string]string) (map[string]string, error) {
	list, err := Settings(raw)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(list))
	for _, s := range list {
		*s.Value, out[s.Flag] = s.Default, SourceDefault
		if name, value, ok := s.lookup(environ); ok {
			*s.Value, out[s.Flag] = value, name
		}
	}
	fs.SetOutput(io.Discard)
	for _, s := range list {
		// The value now holds the variable or the default, so the flag,
		// if given, overrides both.
		if s.Bool {
			fs.Var(boolFlag{s.Value}, s.Flag, s.Usage)
		} else {
			fs.StringVar(s.Value, s.Flag, *s.Value, s.Usage)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("command line: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("command line: unexpected argument %q", fs.Arg(0))
	}
	fs.Visit(func(f *flag.Flag) {
		if _, ok := out[f.Name]; ok { // not the caller's own flags
			out[f.Name] = SourceFlag
		}
	})
	return out, nil
}

// Environ turns os.Environ's KEY=value list into the map Parse takes.
func Environ(kv []string) map[string]string {
	m := make(map[string]string, len(kv))
	for _, e := range kv {
		if k, v, ok := strings.Cut(e, "="); ok {
			m[k] = v
		}
	}
	return m
}

// Report writes err to w one line per problem, each prefixed with
// "prog: ", so that every problem of a joined error stands on its own line.
func Report(w io.Writer, prog string, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintln(w, prog+": "+line)
	}
}
