package sqlite

import (
	"crypto/rand"
	"database/sql"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkSteadyWritesUnderCheckpoints paces one write every 5 ms (five
// 3 KB rows with an indexed random key: pages of their own, as a trickle
// of deliveries writes) while the checkpointer runs its rounds, and
// reports how long the writes took, the tail included: a writer stalled by
// the checkpoint step shows in p99.9, max and the writes over 15 ms.
// Measure, for instance, with
//
//	go test ./store/driver/sqlite -run '^$' -bench SteadyWrites -benchtime 2400x
func BenchmarkSteadyWritesUnderCheckpoints(b *testing.B) {
	db := openIndexedTable(b)
	ctx := b.Context()
	write := func(tx *sql.Tx) error {
		for range 5 {
			if _, err := tx.Exec(`INSERT INTO o (k, v) VALUES (?, ?)`, rand.Text()[:8], rand.Text()+string(make([]byte, 3000))); err != nil {
				return err
			}
		}
		return nil
	}
	took := make([]time.Duration, 0, b.N)
	pace := time.NewTicker(5 * time.Millisecond)
	defer pace.Stop()
	b.ResetTimer()
	for range b.N {
		<-pace.C
		start := time.Now()
		if err := db.Write(ctx, write); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(took)
	over := 0
	for _, d := range took {
		if d > 15*time.Millisecond {
			over++
		}
	}
	at := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(at(0.999), "p99.9-ms")
	b.ReportMetric(at(1), "max-ms")
	b.ReportMetric(float64(over), "over-15ms")
}

// openIndexedTable opens a database with one table, o, of rows with an
// indexed key k and a value v.
func openIndexedTable(b *testing.B) *DB {
	b.Helper()
	db, err := Open(b.Context(), filepath.Join(b.TempDir(), "amsg.db"), slog.Default())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	if _, err := db.Writer().ExecContext(b.Context(), `CREATE TABLE o (k TEXT NOT NULL, v BLOB NOT NULL);
		CREATE INDEX o_k ON o (k)`); err != nil {
		b.Fatal(err)
	}
	return db
}
