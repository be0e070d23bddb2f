package main

import "testing"

func TestParseProcIOReadsTheSyscallCounts(t *testing.T) {
	io := []byte("rchar: 8412\nwchar: 120\nsyscr: 31\nsyscw: 7\nread_bytes: 0\nwrite_bytes: 4096\ncancelled_write_bytes: 0\n")
	if got, want := parseProcIO(io), (syscalls{reads: 31, writes: 7}); got != want {
		t.Fatalf("parseProcIO = %+v, want %+v", got, want)
	}
	if got := parseProcIO([]byte("syscr: x\n")); got != (syscalls{}) {
		t.Fatalf("parseProcIO of a bad value = %+v, want zero", got)
	}
}
