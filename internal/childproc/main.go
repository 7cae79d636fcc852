package childproc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main is the main of a command that runs children (the demos, the token
// benchmark): it parses the arguments with parse, then calls run with a
// context that ends on SIGINT or SIGTERM, so that run stops its children
// before it returns, and exits: 0 for -h and a run that ended well, 2 for
// arguments parse refused, 1 for a run that failed, each error on
// standard error after the command's name.
func Main[O any](name string, parse func(args []string, stderr io.Writer) (O, error), run func(ctx context.Context, o O) error) {
	os.Exit(mainCode(name, os.Args[1:], os.Stderr, parse, run))
}

// mainCode is Main without the exit: it returns the exit status.
func mainCode[O any](name string, args []string, stderr io.Writer,
	parse func([]string, io.Writer) (O, error), run func(context.Context, O) error) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, name+":", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(stderr, name+":", err)
		return 1
	}
	return 0
}
