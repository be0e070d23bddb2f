package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// syscalls counts the read and write system calls of processes (syscr and
// syscw of /proc/pid/io): the sockets' (each push's request and answer)
// and, on SQLite, the pages the store reads back (pread) and writes (the
// WAL's pwrite, two a page, and the checkpoint's). Unlike CPU time they
// do not move with the machine's load. Zero when /proc/pid/io is
// unreadable (not Linux, or another user's process).
type syscalls struct{ reads, writes int64 }

func syscallsOf(pids ...int) syscalls {
	var total syscalls
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
		if err != nil {
			return syscalls{}
		}
		total = total.plus(parseProcIO(b))
	}
	return total
}

func (s syscalls) plus(o syscalls) syscalls  { return syscalls{s.reads + o.reads, s.writes + o.writes} }
func (s syscalls) minus(o syscalls) syscalls { return syscalls{s.reads - o.reads, s.writes - o.writes} }

// parseProcIO reads the syscr and syscw lines of /proc/pid/io.
func parseProcIO(b []byte) syscalls {
	var s syscalls
	for _, line := range bytes.Split(b, []byte("\n")) {
		name, value, ok := bytes.Cut(line, []byte(": "))
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
		if err != nil {
			continue
		}
		switch string(name) {
		case "syscr":
			s.reads = n
		case "syscw":
			s.writes = n
		}
	}
	return s
}
