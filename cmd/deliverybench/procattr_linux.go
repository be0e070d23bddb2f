package main

import "syscall"

// childAttr makes the kernel send a child SIGTERM if the benchmark dies
// without stopping it, so no amsg or push service outlives a killed run.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
