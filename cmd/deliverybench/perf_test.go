package main

import (
	"strings"
	"testing"
)

// A perf report as `perf report --stdio --no-children --sort symbol -g none -q`
// prints it, padding included.
const perfReport = `
     6.20%  [k] _raw_spin_unlock_irqrestore                      -      -
     3.50%  [.] p256MulInternal                                  -      -
     2.30%  [.] modernc.org/sqlite/lib._sqlite3VdbeExec          -      -
     1.50%  [.] modernc.org/sqlite/lib._walChecksumBytes         -      -
     1.10%  [.] modernc.org/libc.(*TLS).Alloc                    -      -
     1.00%  [.] net/http.(*conn).serve                           -      -
     0.90%  [.] runtime.memmove                                  -      -
# a comment line
     garbage
`

func TestParsePerfReport(t *testing.T) {
	entries := parsePerfReport(perfReport)
	if len(entries) != 7 {
		t.Fatalf("parsed %d entries, want 7: %+v", len(entries), entries)
	}
	if e := entries[0]; e.percent != 6.2 || !e.kernel || e.symbol != "_raw_spin_unlock_irqrestore" {
		t.Errorf("first entry %+v", e)
	}
	want := []string{"kernel", "other (assembly, C)", "modernc.org/sqlite/lib", "modernc.org/sqlite/lib",
		"modernc.org/libc", "net/http", "runtime"}
	for i, e := range entries {
		if got := packageOf(e); got != want[i] {
			t.Errorf("packageOf(%q) = %q, want %q", e.symbol, got, want[i])
		}
	}
	summary := summarizeProfile(entries)
	for _, line := range []string{"  3.8%  modernc.org/sqlite/lib", "  6.2%  kernel", "  1.1%  modernc.org/libc.(*TLS).Alloc"} {
		if !strings.Contains(summary, line) {
			t.Errorf("the summary lacks %q:\n%s", line, summary)
		}
	}
	if strings.Index(summary, "kernel") > strings.Index(summary, "modernc.org/sqlite/lib\n") {
		t.Errorf("packages are not in descending order:\n%s", summary)
	}
}
