package store_test

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
)

// On PostgreSQL a claim walks tasks_due in order and leases each task with
// a heap-only (HOT) update: no index entry is written for a lease
// (claimHOTSchema in its driver).
func TestPostgresClaimLeasesWithoutTouchingAnIndex(t *testing.T) {
	url := storetest.DatabaseURL(t)
	st := storetest.Open(t, store.Config{DatabaseURL: url})
	now := time.Now()
	const n = 20
	for i := range n {
		insertTask(t, st, alice, i, now.Add(-time.Minute))
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	plan, claim := st.ClaimSQL()
	if _, err := tx.ExecContext(t.Context(), plan); err != nil {
		t.Fatal(err)
	}
	args := []any{now.Add(time.Minute).UnixMilli(), now.UnixMilli(), now.UnixMilli(), "[]", n}
	var explained []string
	rows, err := tx.QueryContext(t.Context(), `EXPLAIN `+claim, args...)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		explained = append(explained, line)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if p := strings.Join(explained, "\n"); !strings.Contains(p, "Index Scan using tasks_due") || strings.Contains(p, "Sort") {
		t.Errorf("the claim's plan does not walk tasks_due in order:\n%s", p)
	}
	res, err := tx.ExecContext(t.Context(), claim, args...)
	if err != nil {
		t.Fatal(err)
	}
	if leased, err := res.RowsAffected(); err != nil || leased != n {
		t.Fatalf("claimed %d tasks, %v; want %d", leased, err, n)
	}
	var updated, hot int
	err = tx.QueryRowContext(t.Context(), `SELECT pg_stat_get_xact_tuples_updated('tasks'::regclass),
		pg_stat_get_xact_tuples_hot_updated('tasks'::regclass)`).Scan(&updated, &hot)
	if err != nil || updated != n || hot != n {
		t.Errorf("the claim updated %d rows, %d of them HOT (%v); want %d, all HOT", updated, hot, err, n)
	}
}

// On PostgreSQL the outbox's unique (user_id, message_id) index compares
// bytes, so it serves the lookup of one message and a burst's prefix
// range alike (outboxBytewiseSchema in its driver); with sequential scans
// off, the plans say whether the index can serve them at all.
func TestPostgresOutboxQueriesUseTheUniqueIndex(t *testing.T) {
	url := storetest.DatabaseURL(t)
	storetest.Open(t, store.Config{DatabaseURL: url})
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE message_outbox SET delivered_at = 1 WHERE user_id = 'u' AND message_id = 'm'`,
		`SELECT id FROM message_outbox WHERE user_id = 'u' AND message_id COLLATE "C" >= 'm_' AND message_id COLLATE "C" < 'm` + "`" + `' ORDER BY id`,
		`DELETE FROM message_outbox WHERE user_id = 'u' AND message_id IN (SELECT value FROM json_array_elements_text('["m"]'::json))`,
	} {
		var plan []string
		rows, err := conn.QueryContext(t.Context(), `EXPLAIN `+q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		if p := strings.Join(plan, "\n"); !strings.Contains(p, "message_outbox_user_id_message_id_key") {
			t.Errorf("%s: the plan does not use the unique index:\n%s", q, p)
		}
	}
}
