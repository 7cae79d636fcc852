package flagenv

import (
	"errors"
	"fmt"
)

// Checker converts settings' text to typed values and collects every
// problem and warning, so that one run reports them all. Its methods take
// the flag's name, which Name turns into how the user gave the value. The
// zero Checker is not usable; call NewChecker.
type Checker struct {
	// DurationExamples completes "must be a duration such as ..."; each
	// command keeps its own examples. Empty means "500ms, 5s or 2m".
	DurationExamples string

	sources  map[string]string
	errs     []error
	warnings []string
}

// NewChecker returns a Checker naming settings after sources, as Parse
// returns them.
func NewChecker(sources map[string]string) *Checker {
	return &Checker{sources: sources}
}

// Name is how a problem refers to a setting: --flag if the value came from
// the command line, the variable if from the environment, and
// "--flag (default)" otherwise.
func (c *Checker) Name(flagName string) string {
	switch src := c.sources[flagName]; src {
	case SourceFlag:
		return "--" + flagName
	case SourceDefault, "":
		return "--" + flagName + " (default)"
	default:
		return src
	}
}

// Explicit reports whether the user gave the setting, by flag or variable.
func (c *Checker) Explicit(flagName string) bool {
	src, ok := c.sources[flagName]
	return ok && src != SourceDefault
}

// Fail records that value, given for flagName, breaks rule.
func (c *Checker) Fail(flagName, value, rule string) {
	c.errs = append(c.errs, fmt.Errorf("%s: %s, got %q", c.Name(flagName), rule, value))
}

// Warn records a problem that does not stop the command.
func (c *Checker) Warn(msg string) {
	c.warnings = append(c.warnings, msg)
}

// Err joins every problem recorded, one per line, in the order found; nil
// when there was none.
func (c *Checker) Err() error {
	return errors.Join(c.errs...)
}

// Warnings returns the warnings recorded, in order; nil when there was none.
func (c *Checker) Warnings() []string {
	return c.warnings
}
