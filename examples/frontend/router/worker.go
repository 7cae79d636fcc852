package router

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Worker is one worker of the fleet: its slotgate's proxy URL, where
// requests go, and its admin URL, whose load stream the router follows.
type Worker struct {
	// Name identifies the worker in stats and logs; unique in a Router.
	Name string
	// Proxy is the base URL of slotgate's proxy port, http://host:port.
	Proxy string
	// Admin is the base URL of slotgate's admin port, http://host:port.
	Admin string
}

// ParseWorker reads a --worker value: "proxy=URL,admin=URL", with an
// optional "name=NAME" (by default the proxy's host:port). Both URLs must
// be http or https (any case) with a host; they are returned as net/url
// writes them. It fails naming what is wrong, with the
// value.
func ParseWorker(s string) (Worker, error) {
	var w Worker
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Worker{}, fmt.Errorf("worker %q: %q is not key=value (want proxy=URL,admin=URL)", s, part)
		}
		if seen[key] {
			return Worker{}, fmt.Errorf("worker %q: %s given twice", s, key)
		}
		seen[key] = true
		switch key {
		case "proxy":
			w.Proxy = value
		case "admin":
			w.Admin = value
		case "name":
			w.Name = value
		default:
			return Worker{}, fmt.Errorf("worker %q: unknown key %q (want proxy, admin and optionally name)", s, key)
		}
	}
	if err := w.validate(); err != nil {
		return Worker{}, fmt.Errorf("worker %q: %w", s, err)
	}
	// Written as net/url writes them (a scheme in lower case, as
	// "HTTP://" is the same URL), so that equal URLs compare equal.
	proxy, _ := url.Parse(w.Proxy) // validated above
	admin, _ := url.Parse(w.Admin)
	w.Proxy, w.Admin = proxy.String(), admin.String()
	if w.Name == "" {
		w.Name = proxy.Host
	}
	return w, nil
}

// validate checks both URLs; the name may be empty here.
func (w Worker) validate() error {
	var problems []string
	for _, f := range []struct{ key, value string }{{"proxy", w.Proxy}, {"admin", w.Admin}} {
		if err := checkURL(f.value); err != nil {
			problems = append(problems, fmt.Sprintf("%s=%q: %s", f.key, f.value, err.Error()))
		}
	}
	if len(problems) > 0 {
		// One line, for a flag's error message.
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func checkURL(s string) error {
	if s == "" {
		return errors.New("missing")
	}
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want http[s]://host:port")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return errors.New("want no query or fragment")
	}
	return nil
}
