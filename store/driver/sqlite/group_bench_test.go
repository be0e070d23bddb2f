//go:build unix

package sqlite

import (
	"crypto/rand"
	"database/sql"
	"fmt"
	"syscall"
	"testing"
	"time"
)

// BenchmarkGroupWithoutSavepoints is the writer's CPU a group commit of
// groupWrites writes, each a few rows with random index keys into a table
// that already holds pages of them (so a savepoint copies the pages it
// changes to its sub-journal), the two ways in turn on one database:
// "savepoints", each write in a savepoint of its own (tryGroup), and
// "bare", the group without (commitGroup, which falls back to savepoints
// only when a write fails). Run it once:
//
//	go test ./store/driver/sqlite -run '^$' -bench GroupWithoutSavepoints -benchtime 1x
func BenchmarkGroupWithoutSavepoints(b *testing.B) {
	const (
		history     = 20000 // rows written before
		rounds      = 400   // of each way
		groupWrites = 6
		rowsAWrite  = 3
	)
	db := openIndexedTable(b)
	ctx := b.Context()
	write := func(tx *sql.Tx) error {
		for range rowsAWrite {
			if _, err := tx.Exec(`INSERT INTO o (k, v) VALUES (?, ?)`, rand.Text()[:12], make([]byte, 200)); err != nil {
				return err
			}
		}
		return nil
	}
	for range history / rowsAWrite / groupWrites {
		db.commitGroup(newOps(ctx, fill(write, groupWrites)...))
	}
	ways := []struct {
		name string
		run  func([]*writeOp)
	}{
		{"savepoints", func(ops []*writeOp) { db.tryGroup(ops) }},
		{"bare", db.commitGroup},
	}
	cpu := make([]time.Duration, len(ways))
	b.ResetTimer()
	for r := range len(ways) * rounds {
		way := r % len(ways)
		ops := newOps(ctx, fill(write, groupWrites)...)
		before := processCPU(b)
		ways[way].run(ops)
		cpu[way] += processCPU(b) - before
		for _, err := range results(ops) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	for i, w := range ways {
		b.ReportMetric(float64(cpu[i].Microseconds())/rounds, fmt.Sprintf("%s-cpu-µs/group", w.name))
	}
}

// fill is n times fn.
func fill(fn func(*sql.Tx) error, n int) []func(*sql.Tx) error {
	fns := make([]func(*sql.Tx) error, n)
	for i := range fns {
		fns[i] = fn
	}
	return fns
}

// processCPU is the CPU time the process has used.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
