package main

import (
	"strings"
	"testing"
	"time"
)

func TestCounterValue(t *testing.T) {
	text := `# HELP amsg_store_commits_total Transactions the SQLite writer committed.
# TYPE amsg_store_commits_total counter
amsg_store_commits_total_other 9
amsg_store_commits_total 1234
`
	n, err := counterValue(strings.NewReader(text), commitsMetric)
	if err != nil || n != 1234 {
		t.Errorf("counterValue = %d, %v; want 1234", n, err)
	}
	if _, err := counterValue(strings.NewReader("other 1\n"), commitsMetric); err == nil {
		t.Error("a missing counter was read")
	}
	if _, err := counterValue(strings.NewReader(commitsMetric+" NaN\n"), commitsMetric); err == nil {
		t.Error("NaN was read as a count")
	}
}

// A process in both readings counts its difference, one started in
// between all of its time, one that ended nothing.
func TestCPUBetween(t *testing.T) {
	before := map[int]time.Duration{1: time.Second, 2: 2 * time.Second}
	after := map[int]time.Duration{1: 3 * time.Second, 3: 500 * time.Millisecond}
	if got := cpuBetween(before, after); got != 2500*time.Millisecond {
		t.Errorf("cpuBetween = %s, want 2.5s", got)
	}
}
