package main

import (
	"os"
	"os/exec"
	"runtime"
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
