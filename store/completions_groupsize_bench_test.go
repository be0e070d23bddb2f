//go:build unix

package store

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkSQLiteCompletionsByGroupSize is the writer's CPU a push for the
// completions of a trickle committed in groups of two sizes (issue 24,
// branch trickle2): each round claims perRound tasks, as the scheduler
// claims a trickle ahead, and commits their completions in groups of the
// size the round's turn gives, each group one transaction, as the writer
// commits what lingered together (sqlite groupLinger: about 6 completions
// a commit at 1 000 pushes a second with a 5 ms linger, about 14 with
// 15 ms). The sizes take turns round by round on one database, so the
// machine's speed moves both alike; the claims are not counted. Run it once:
//
//	go test ./store -run '^$' -bench SQLiteCompletionsByGroupSize -benchtime 1x
func BenchmarkSQLiteCompletionsByGroupSize(b *testing.B) {
	const (
		users    = 100
		history  = 50 * users // pushes delivered before
		pending  = 5000       // tasks due later, as a running trickle has
		perRound = 42         // tasks a round claims: 7 groups of 6, 3 of 14
		rounds   = 60         // of each size
	)
	sizes := []int{6, 14}
	st, clk := openTrickleBench(b, users, history, pending, history+len(sizes)*rounds*perRound)
	cpu := make([]time.Duration, len(sizes))
	commits := make([]int, len(sizes))
	b.ResetTimer()
	for r := range len(sizes) * rounds {
		way := r % len(sizes)
		cs := trickleCompletions(b, st, clk, history+r*perRound, perRound, users)
		before := processCPU(b)
		for len(cs) > 0 {
			group := cs[:min(sizes[way], len(cs))]
			cs = cs[len(group):]
			writeCompletions(b, st, group)
			commits[way]++
		}
		cpu[way] += processCPU(b) - before
	}
	b.StopTimer()
	for i, size := range sizes {
		b.ReportMetric(float64(cpu[i].Microseconds())/(rounds*perRound), fmt.Sprintf("groups-of-%d-cpu-µs/push", size))
	}
	if commits[0]*sizes[0] != commits[1]*sizes[1] {
		b.Fatalf("commits %v for groups of %v", commits, sizes)
	}
}
