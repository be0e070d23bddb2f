//go:build unix

package main

import "syscall"

// descriptorLimit is the process's limit on open files (the soft limit,
// which Go raises to the hard one at start).
func descriptorLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	return uint64(lim.Cur)
}
