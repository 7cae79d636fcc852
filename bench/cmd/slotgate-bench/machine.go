package main

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// machine describes where the run was made.
type machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	Go       string `json:"go"`
	Slotgate string `json:"slotgate"`
	HAProxy  string `json:"haproxy,omitempty"`
	Nginx    string `json:"nginx,omitempty"`
}

func describe(slotgate, haproxy, nginx string) machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), Slotgate: firstLine(slotgate, "--version")}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for l := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if haproxy != "" {
		m.HAProxy = firstLine(haproxy, "-v")
	}
	if nginx != "" {
		m.Nginx = firstLine(nginx, "-v")
	}
	return m
}

// firstLine runs path with args and returns the first line it printed.
func firstLine(path string, args ...string) string {
	out, _ := exec.Command(path, args...).CombinedOutput()
	l, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return l
}

// nginxHTTP2On says whether the nginx whose `nginx -v` line is v takes
// `http2 on` (1.25.1 and later); false when v names no version, since
// the listen's http2 parameter, which older versions need, still works
// (deprecated) in newer ones.
func nginxHTTP2On(v string) bool {
	_, ver, ok := strings.Cut(v, "nginx/")
	if !ok {
		return false
	}
	ver, _, _ = strings.Cut(ver, " ")
	var n [3]int
	for i, part := range strings.SplitN(ver, ".", 3) {
		x, err := strconv.Atoi(part)
		if err != nil {
			return false
		}
		n[i] = x
	}
	return n[0]*1_000_000+n[1]*1_000+n[2] >= 1_025_001
}
