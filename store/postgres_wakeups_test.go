package store_test

import (
	"testing"
	"time"
)

// The next claimable instant reads the leased tasks ahead of the first
// unleased one and that one, not every task due at the same instant: a
// burst scheduled for one instant made each lookup read 1 024 rows while
// it was being scheduled (its driver's wakeUpsSchema).
func TestPostgresNextClaimableReadsOnlyTheTasksAhead(t *testing.T) {
	st, conn := migratedSchema(t)
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	const n = 200
	for i := range n {
		insertTask(t, st, alice, i, at)
	}
	tx, err := conn.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var next int64
	if err := tx.QueryRowContext(t.Context(), `SELECT amsg_next_claimable()`).Scan(&next); err != nil {
		t.Fatal(err)
	}
	if next != at.UnixMilli() {
		t.Errorf("amsg_next_claimable() = %d, want %d", next, at.UnixMilli())
	}
	var read int64
	if err := tx.QueryRowContext(t.Context(), `SELECT pg_stat_get_xact_tuples_returned('tasks_due'::regclass)`).Scan(&read); err != nil {
		t.Fatal(err)
	}
	if read > 4 {
		t.Errorf("amsg_next_claimable() read %d entries of tasks_due for %d tasks due at one instant, none leased; want 2", read, n)
	}
}
