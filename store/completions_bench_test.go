//go:build unix

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"
)

// BenchmarkSQLiteGroupOfCompletions is the CPU a push's completion costs
// SQLite's writer in a group of perGroup completions (issue 24), the two
// ways the writer can run them, round by round in turn on one database
// (so the machine's speed moves both alike): "alone", each in a savepoint
// of its own (completeOne: about seven statements, as every completion
// went before combined writes), and "combined", the group in one
// savepoint and one call of the completions' kind (multi-row statements
// of prepared row counts). Each round's write is one transaction and its
// commit. Run it once:
//
//	go test ./store -run '^$' -bench SQLiteGroupOfCompletions -benchtime 1x
func BenchmarkSQLiteGroupOfCompletions(b *testing.B) {
	const (
		users    = 100
		history  = 50 * users // pushes delivered before
		pending  = 5000       // tasks due later, as a running trickle has
		rounds   = 200        // of each way
		perGroup = 8          // completions a group commits
	)
	st, clk := openTrickleBench(b, users, history, pending, history+2*rounds*perGroup)
	ctx := context.Background()
	savepoints := map[string]*sql.Stmt{}
	for _, q := range []string{"SAVEPOINT write", "RELEASE write"} {
		var err error
		if savepoints[q], err = st.writer.PrepareContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	inSavepoint := func(tx *sql.Tx, fn func() error) error {
		if _, err := tx.Stmt(savepoints["SAVEPOINT write"]).Exec(); err != nil {
			return err
		}
		if err := fn(); err != nil {
			return err
		}
		_, err := tx.Stmt(savepoints["RELEASE write"]).Exec()
		return err
	}
	ways := []struct {
		name  string
		write func(tx *sql.Tx, cs []completion) error
	}{
		{"alone", func(tx *sql.Tx, cs []completion) error {
			for _, c := range cs {
				if err := inSavepoint(tx, func() error {
					outcome, err := st.completeOne(ctx, tx, c)
					return errors.Join(outcome, err)
				}); err != nil {
					return err
				}
			}
			return nil
		}},
		{"combined", func(tx *sql.Tx, cs []completion) error {
			items := make([]any, len(cs))
			for i, c := range cs {
				items[i] = &combinedWrite[completion]{req: c}
			}
			return inSavepoint(tx, func() error { return st.completions.kind.Combine(ctx, tx, items) })
		}},
	}
	cpu := make([]time.Duration, len(ways))
	b.ResetTimer()
	for r := range 2 * rounds {
		way := r % len(ways)
		cs := trickleCompletions(b, st, clk, history+r*perGroup, perGroup, users)
		before := processCPU(b)
		if err := st.write(ctx, func(tx *sql.Tx) error { return ways[way].write(tx, cs) }); err != nil {
			b.Fatal(err)
		}
		cpu[way] += processCPU(b) - before
	}
	b.StopTimer()
	for i, w := range ways {
		b.ReportMetric(float64(cpu[i].Microseconds())/(rounds*perGroup), fmt.Sprintf("%s-cpu-µs/push", w.name))
	}
}
