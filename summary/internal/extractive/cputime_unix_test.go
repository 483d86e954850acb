//go:build unix

package extractive_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process has used so
// far: benchmarks report it per operation, which other processes on a busy
// machine do not inflate the way they inflate wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
