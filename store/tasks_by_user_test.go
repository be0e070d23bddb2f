package store_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
)

// A task is in one index of its user's tasks, keyed by status then time,
// where it was in two (issue 24): one entry fewer to write when it is
// scheduled and to remove when it is delivered.
func TestATaskIsInOneIndexOfItsUser(t *testing.T) {
	st := storetest.New(t)
	report, err := st.Schema(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var byUser []string
	for _, ix := range report.Indexes {
		if ix.Table == "tasks" && len(ix.Columns) > 0 && ix.Columns[0] == "user_id" {
			// PostgreSQL's ends with id, as SQLite's ends with the rowid.
			byUser = append(byUser, ix.Name+" ("+strings.TrimSuffix(strings.Join(ix.Columns, ", "), ", id")+")")
		}
	}
	if want := "tasks_user (user_id, status, next_send_at)"; strings.Join(byUser, "; ") != want {
		t.Errorf("the tasks' indexes by user are %q, want %q", byUser, want)
	}
}

// On PostgreSQL every read of a user's tasks reads tasks_user, and the
// pages of a listing come in its order, unsorted: one status's range, or
// the merge (Merge Append) of each status's range
// (TestTaskQueriesUseTheirIndexes checks SQLite's plans).
func TestPostgresTaskReadsByUserUseOneIndex(t *testing.T) {
	st, conn := migratedSchema(t)
	now := time.Now()
	for i := range 200 { // alice's tasks among those of 20 users
		user := alice
		if i%20 != 0 {
			user = "user-" + strconv.Itoa(i%20)
		}
		insertTask(t, st, user, i, now.Add(time.Duration(i)*time.Minute))
	}
	if _, err := conn.ExecContext(t.Context(), `ANALYZE tasks; SET enable_sort = off`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query string
		args  []any
	}{
		{store.PendingTasksSQL, []any{alice}},
		{`SELECT count(*) FROM tasks WHERE user_id = ?`, []any{alice}},
		{store.TasksPageSQL(1), []any{alice, "pending", 10, 0}},
		{store.TasksPageSQL(3), []any{alice, "pending", 10, alice, "sent", 10, alice, "failed", 10, 10, 0}},
		{`SELECT id, deferred_until FROM tasks WHERE user_id = ? AND status = 'pending' AND deferred_until = next_send_at`, []any{alice}},
		{`DELETE FROM tasks WHERE user_id = ?`, []any{alice}},
	} {
		p := explain(t, conn, numberParams(c.query), c.args...)
		if !strings.Contains(p, "tasks_user") || strings.Contains(p, "Sort  (") {
			t.Errorf("%s: the plan does not read tasks_user unsorted:\n%s", c.query, p)
		}
	}
	// The inventory lists a user's tasks by id: their entries, sorted (as
	// before), not the table in id order.
	if _, err := conn.ExecContext(t.Context(), `SET enable_sort = on`); err != nil {
		t.Fatal(err)
	}
	inventory := `SELECT uuid, length(payload), updated_at, status FROM tasks WHERE user_id = $1 ORDER BY id LIMIT $2`
	if p := explain(t, conn, inventory, alice, 10); !strings.Contains(p, "tasks_user") {
		t.Errorf("the inventory's plan does not read tasks_user:\n%s", p)
	}
}

// numberParams spells the store's ? parameters as PostgreSQL's $n, as the
// store's driver does.
func numberParams(q string) string {
	parts := strings.Split(q, "?")
	var b strings.Builder
	for i, part := range parts {
		if i > 0 {
			b.WriteString("$" + strconv.Itoa(i))
		}
		b.WriteString(part)
	}
	return b.String()
}
