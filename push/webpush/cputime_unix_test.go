//go:build unix

package webpush

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used, user and system. On a
// shared machine it measures work where wall-clock time measures neighbours.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
