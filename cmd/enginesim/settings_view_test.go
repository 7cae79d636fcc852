package main

import "github.com/slotgate/slotgate/internal/flagenv"

// setting and settings give the older tests their view of raw's tags, now
// read by internal/flagenv.
type setting struct{ flag, env, def, usage string }

func settings(r *raw) []setting {
	var out []setting
	for _, s := range flagenv.MustSettings(r) {
		out = append(out, setting{flag: s.Flag, env: s.Env, def: s.Default, usage: s.Usage})
	}
	return out
}
