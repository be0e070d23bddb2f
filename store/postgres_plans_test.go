package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// The plans of PostgreSQL's hot and housekeeping statements after issue
// 24's schema steps (its driver's claimHOTSchema, outboxBytewiseSchema and
// timeRangesSchema).

// explain returns q's plan as q runs in conn or tx (a *sql.Conn or *sql.Tx).
func explain(t *testing.T, on interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, q string, args ...any) string {
	t.Helper()
	rows, err := on.QueryContext(t.Context(), `EXPLAIN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

// migratedSchema opens a store on a fresh PostgreSQL schema, so that it
// is migrated, and returns a connection to that schema with sequential
// scans off: on tables this small the plans then say whether an index can
// serve a statement at all.
func migratedSchema(t *testing.T) (*store.Store, *sql.Conn) {
	t.Helper()
	url := storetest.DatabaseURL(t)
	st := storetest.Open(t, store.Config{DatabaseURL: url})
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(t.Context(), `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	return st, conn
}

// A claim walks tasks_due in order and leases each task with a heap-only
// (HOT) update: no index entry is written for a lease.
func TestPostgresClaimLeasesWithoutTouchingAnIndex(t *testing.T) {
	st, conn := migratedSchema(t)
	tx, claim, now := claimTx(t, st, conn, `SET LOCAL enable_seqscan = on; `)
	args := []any{now.Add(time.Minute).UnixMilli(), now.UnixMilli(), now.UnixMilli(), "[]", claimTasks, now.UnixMilli(),
		int64(math.MinInt64), int64(math.MinInt64)}
	if p := explain(t, tx, claim, args...); !strings.Contains(p, "Index Scan using tasks_due") || strings.Contains(p, "Sort") {
		t.Errorf("the claim's plan does not walk tasks_due in order:\n%s", p)
	}
	wantAllLeased(t, tx, claim, args...)
	var updated, hot int
	err := tx.QueryRowContext(t.Context(), `SELECT pg_stat_get_xact_tuples_updated('tasks'::regclass),
		pg_stat_get_xact_tuples_hot_updated('tasks'::regclass)`).Scan(&updated, &hot)
	if err != nil || updated != claimTasks || hot != claimTasks {
		t.Errorf("the claim updated %d rows, %d of them HOT (%v); want %d, all HOT", updated, hot, err, claimTasks)
	}
}

// The claim is planned once a session (a generic plan, where PostgreSQL
// planned it again on every call), and that plan walks tasks_due in order
// whatever the statistics it was made with: here those of an empty table,
// made stale by a burst of inserts.
func TestPostgresClaimIsPlannedOnceWhateverTheStatistics(t *testing.T) {
	st, conn := migratedSchema(t)
	if _, err := conn.ExecContext(t.Context(), `SET enable_seqscan = on; ANALYZE tasks`); err != nil {
		t.Fatal(err)
	}
	tx, claim, now := claimTx(t, st, conn, "")
	if _, err := tx.ExecContext(t.Context(), `PREPARE claim AS `+claim); err != nil {
		t.Fatal(err)
	}
	execute := fmt.Sprintf(`EXECUTE claim(%d, %d, %d, '[]', %d, %d, %d, %d)`,
		now.Add(time.Minute).UnixMilli(), now.UnixMilli(), now.UnixMilli(), claimTasks, now.UnixMilli(),
		int64(math.MinInt64), int64(math.MinInt64))
	p := explain(t, tx, execute)
	if !strings.Contains(p, "claimable_at <= $3") || !strings.Contains(p, "ROW(claimable_at, id) > ROW($7, $8)") {
		t.Errorf("the claim was planned for its arguments, not once for all:\n%s", p)
	}
	if !strings.Contains(p, "Index Scan using tasks_due") || strings.Contains(p, "Sort") || strings.Contains(p, "Seq Scan") {
		t.Errorf("the claim's plan does not walk tasks_due in order:\n%s", p)
	}
	wantAllLeased(t, tx, execute)
}

// claimTasks is how many due tasks claimTx inserts.
const claimTasks = 20

// claimTx inserts claimTasks tasks of alice due a minute ago and returns a
// transaction on conn that has run settings and the claim's ClaimPlan, the
// claim's statement, and the instant the tasks are due by.
func claimTx(t *testing.T, st *store.Store, conn *sql.Conn, settings string) (*sql.Tx, string, time.Time) {
	t.Helper()
	now := time.Now()
	for i := range claimTasks {
		insertTask(t, st, alice, i, now.Add(-time.Minute))
	}
	tx, err := conn.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	plan, claim := st.ClaimSQL()
	if _, err := tx.ExecContext(t.Context(), settings+plan); err != nil {
		t.Fatal(err)
	}
	return tx, claim, now
}

// wantAllLeased runs a claim in tx and checks that it leased every task
// claimTx inserted.
func wantAllLeased(t *testing.T, tx *sql.Tx, claim string, args ...any) {
	t.Helper()
	res, err := tx.ExecContext(t.Context(), claim, args...)
	if err != nil {
		t.Fatal(err)
	}
	if leased, err := res.RowsAffected(); err != nil || leased != claimTasks {
		t.Fatalf("claimed %d tasks, %v; want %d", leased, err, claimTasks)
	}
}

// The outbox's unique (user_id, message_id) index compares bytes, so it
// serves the lookup of one message and a burst's prefix range alike.
func TestPostgresOutboxQueriesUseTheUniqueIndex(t *testing.T) {
	_, conn := migratedSchema(t)
	for _, q := range []string{
		`UPDATE message_outbox SET delivered_at = 1 WHERE user_id = 'u' AND message_id = 'm'`,
		`SELECT id FROM message_outbox WHERE user_id = 'u' AND message_id COLLATE "C" >= 'm_' AND message_id COLLATE "C" < 'm` + "`" + `' ORDER BY id`,
		`DELETE FROM message_outbox WHERE user_id = 'u' AND message_id IN (SELECT value FROM json_array_elements_text('["m"]'::json))`,
	} {
		if p := explain(t, conn, q); !strings.Contains(p, "message_outbox_user_id_message_id_key") {
			t.Errorf("%s: the plan does not use the unique index:\n%s", q, p)
		}
	}
}

// The cleanup's deletes by time, and the chart's count by day, read the
// block-range indexes.
func TestPostgresPrunesReadTheTimeRanges(t *testing.T) {
	_, conn := migratedSchema(t)
	for q, index := range map[string]string{
		`DELETE FROM message_events WHERE at < 1`:                                            "message_events_at",
		`DELETE FROM delivery_log WHERE at < 1`:                                              "delivery_log_at",
		`DELETE FROM message_outbox WHERE acked_at < 1 OR created_at < 1`:                    "message_outbox_created",
		`SELECT at / 86400000 AS day, count(*) FROM message_events WHERE at >= 1 GROUP BY 1`: "message_events_at",
	} {
		if p := explain(t, conn, q); !strings.Contains(p, "Bitmap Index Scan on "+index) {
			t.Errorf("%s: the plan does not read %s:\n%s", q, index, p)
		}
	}
}

// Behind a transaction pooler the pool speaks the simple protocol, which
// binds the column arrays of a batch as well: completions written
// together keep each push's attempt, outbox row and events.
func TestPostgresBatchesThroughTheSimpleProtocol(t *testing.T) {
	url := storetest.DatabaseURL(t)
	clk := newClock()
	st := storetest.Open(t, store.Config{DatabaseURL: url, DatabasePooler: store.PoolerTransaction, Now: clk.Now})
	ctx := t.Context()
	const n = 40
	tasks := claimNew(t, st, clk.now, n)
	errs := make(chan error, n)
	for i, task := range tasks {
		id := fmt.Sprintf("m%d", i)
		go func() {
			errs <- st.CompleteTask(ctx, task.Lease(), time.Time{}, push.Bookkeeping{UserID: alice,
				Record:   []store.OutboxMessage{outboxMessage(id, 0)},
				Attempts: []push.Attempt{{MessageID: id, UserID: alice, DeviceID: 1, Try: 1, Status: 201, Outcome: push.OutcomeDelivered}}})
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if left, _, err := st.Tasks(ctx, alice, "", 10, 0); err != nil || len(left) != 0 {
		t.Errorf("tasks left after their completions: %d, %v", len(left), err)
	}
	page, err := st.UnackedOutbox(ctx, alice, 0, store.MaxOutboxPage)
	if err != nil || len(page.Entries) != n {
		t.Errorf("outbox: %d rows, %v; want %d", len(page.Entries), err, n)
	}
	for i := range n {
		id := fmt.Sprintf("m%d", i)
		story, err := st.MessageTimeline(ctx, alice, id)
		if want := []string{"queued  {}", "sent  {}", `accepted 1 {"status":201,"try":1}`}; err != nil || !reflect.DeepEqual(summarize(story), want) {
			t.Errorf("timeline of %s = %q, %v; want %q", id, summarize(story), err, want)
		}
	}
}
