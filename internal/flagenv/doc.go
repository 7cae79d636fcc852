// Package flagenv reads a command's settings from its command line and its
// environment, and checks their text, for slotgate's commands: slotgate
// (through config), enginesim and slotgate-loadgen. Each command keeps its
// own raw struct, its own rules and its own Config; this package holds the
// machinery they share.
//
// A raw struct has only string fields, each tagged with flag, env (its tags
// read by github.com/caarlos0/env), optionally envDefault, usage, alias for
// other variables that give the setting (such as a legacy name), and
// bool:"true" for a flag that may be given without a value. Field order is
// --help order.
//
// Invariants:
//
//   - Precedence is flag, then environment variable, then each alias in the
//     tag's order, then default, for every setting; a variable set to ""
//     counts as unset.
//   - Parse reads nothing from the process: the caller passes the arguments
//     and the environment, so tests need no process state.
//   - Every setting has exactly one source: "flag", the name of the variable
//     that gave the value (the alias, when an alias did), or "default"; so
//     a problem names the variable the user actually set.
//   - No variable gives two settings, or one setting under two names.
//   - A Checker never stops at the first problem: it records every one, each
//     on its own line as "NAME: RULE, got "VALUE"", where NAME is --flag,
//     VARIABLE or --flag (default), after where the value came from.
//   - A check that fails returns the zero value, so later rules between
//     settings can tell an unusable input from a usable one.
//   - The wording of numeric rules belongs to the caller, which passes it in:
//     each command's messages are part of its interface.
package flagenv
