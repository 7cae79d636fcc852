// Package childproc runs the demos' child processes: slotgate, enginesim,
// the load generator and the frontends, each started from a binary with
// its output to a log file, waited on until it logs a line (its JSON
// "listening" line, usually), and stopped when the run ends, also on
// Ctrl-C. WaitReady polls a child's readiness endpoint; Main is the main
// of a command that runs children (parse, a context that ends on SIGINT
// or SIGTERM, the exit status). It is the standard library only.
//
// Invariants:
//
//   - Every child runs in a process group of its own, whose id is its pid:
//     stopping it stops whatever it started too, and a Ctrl-C at the
//     terminal reaches the demo only, which then stops its children in
//     order.
//   - A Group stops its children in reverse order of start: a load
//     generator before the frontend it drives, a slotgate before its
//     engine.
//   - Stop sends SIGTERM to the child's group, then SIGKILL once the
//     grace has passed without the child ending, and returns only once the
//     child was waited for. It is safe on a child that already ended.
//   - On Linux a child is killed (SIGKILL) when its parent dies without
//     stopping it, a crash or a SIGKILL, through Pdeathsig. Elsewhere such
//     a child keeps running.
//   - Every goroutine the package starts ends when its process does: one
//     per child, which waits for it and closes its log file.
//   - A log line is looked for in the log file as written so far; a wait
//     ends when the line is there, the child ended, the limit passed or
//     the caller's context ended, whichever comes first.
package childproc
