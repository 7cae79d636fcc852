package flagenv

import "strings"

// Shadow is a variable that was set but gave nothing, because another name
// of the same setting comes first: a legacy name beside the canonical one.
type Shadow struct {
	// Flag is the setting's flag name.
	Flag string
	// Used is the variable that gave the value, and UsedValue its text.
	Used, UsedValue string
	// Ignored is the variable set after it, and IgnoredValue its text.
	Ignored, IgnoredValue string
}

// Shadowed lists, for each setting of list whose value came from a
// variable (as sources, from Parse, say), every later name of it set to a
// text that differs from the value's, spaces aside. A flag given on the
// command line shadows nothing: that flags win is the rule for every
// setting. The order is list's, then the names'.
func Shadowed(list []Setting, sources, environ map[string]string) []Shadow {
	var out []Shadow
	for _, s := range list {
		used, value, ok := s.lookup(environ)
		if !ok || sources[s.Flag] != used {
			continue
		}
		later := false
		for _, name := range s.names() {
			if name == used {
				later = true
				continue
			}
			if v := environ[name]; later && v != "" && strings.TrimSpace(v) != strings.TrimSpace(value) {
				out = append(out, Shadow{Flag: s.Flag, Used: used, UsedValue: value, Ignored: name, IgnoredValue: v})
			}
		}
	}
	return out
}
