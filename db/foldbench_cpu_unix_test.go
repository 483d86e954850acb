//go:build unix

package db_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU is the CPU time the PostgreSQL server at rawURL has used —
// its postmaster, its live processes and its reaped backends — when the
// server runs on this machine and /proc shows it; ok is false otherwise.
// Other databases of the same server count too.
func serverCPU(rawURL string) (cpu time.Duration, ok bool) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Port() == "" {
		return 0, false
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	master := ""
	for _, st := range stats {
		dir := filepath.Dir(st)
		cmd, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmd), "\x00")
		if len(args) == 0 || !strings.HasSuffix(args[0], "/postgres") {
			continue
		}
		for i, a := range args {
			if a == "-p" && i+1 < len(args) && args[i+1] == u.Port() {
				master = filepath.Base(dir)
			}
		}
	}
	if master == "" {
		return 0, false
	}
	tick := time.Second / 100 // USER_HZ
	for _, st := range stats {
		raw, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 15 {
			continue
		}
		pid := filepath.Base(filepath.Dir(st))
		if pid != master && f[1] != master { // f[1] is the parent's pid
			continue
		}
		for i, field := range []int{11, 12, 13, 14} { // utime stime cutime cstime
			if pid != master && i >= 2 {
				break
			}
			n, _ := strconv.ParseInt(f[field], 10, 64)
			cpu += time.Duration(n) * tick
		}
	}
	return cpu, true
}
