package main

import (
	"maps"
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
// between all of its time, one that ended nothing; each under its kind.
func TestCPUBetween(t *testing.T) {
	before := map[int]serverProcess{1: {time.Second, "client backend"}, 2: {2 * time.Second, "client backend"}, 4: {time.Second, "walwriter"}}
	after := map[int]serverProcess{1: {3 * time.Second, "client backend"}, 3: {500 * time.Millisecond, "autovacuum worker"}, 4: {time.Second, "walwriter"}}
	got := cpuBetween(before, after)
	want := map[string]kindCPU{"client backend": {2 * time.Second, 1}, "autovacuum worker": {500 * time.Millisecond, 1}, "walwriter": {0, 0}}
	if !maps.Equal(got, want) {
		t.Errorf("cpuBetween = %v, want %v", got, want)
	}
	if sum := total(got); sum != 2500*time.Millisecond {
		t.Errorf("total = %s, want 2.5s", sum)
	}
	if got, want := byKind(got, 1000), "client backend 2000 in 1, autovacuum worker 500 in 1"; got != want {
		t.Errorf("byKind = %q, want %q", got, want)
	}
}
