package store

import (
	"strings"
	"testing"
	"time"

	"amsg/push/webpush"
)

// The scheduler claims with one range scan of tasks_due and never sorts,
// finds the next claimable instant by walking tasks_due from its start, and
// the cleanup reads the partial index of finished rows, whatever the table
// holds. Every read of a user's tasks reads tasks_user, the one index of a
// user's tasks (by status, then time): the task quota and the counts read
// only its entries, a page of one status its range in time order, a page of
// every status the merge of each status's range, and none sorts but the
// inventory (by id, as before: a user's tasks are bounded by the quota and
// the cleanup).
func TestTaskQueriesUseTheirIndexes(t *testing.T) {
	st, err := Open(t.Context(), Config{Path: t.TempDir() + "/amsg.db", MasterKey: strings.Repeat("a", 64),
		GenerateVAPID: webpush.GenerateVAPIDKeys})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, c := range []struct {
		query string
		want  []string
	}{
		{st.claimDueSQL(), []string{"SEARCH tasks USING INTEGER PRIMARY KEY (rowid=?)", "LIST SUBQUERY 2",
			"SEARCH tasks USING INDEX tasks_due (<expr><?)", "LIST SUBQUERY 1", "SCAN json_each VIRTUAL TABLE INDEX 1:", "CREATE BLOOM FILTER"}},
		// The first task without a lease, walking tasks_due in order, then
		// the range of the leased tasks before it.
		{st.nextClaimableSQL(), []string{"CO-ROUTINE ahead", "SEARCH tasks USING INDEX tasks_due (<expr><?)", "SCALAR SUBQUERY 3",
			"MATERIALIZE first", "CO-ROUTINE (subquery-1)", "SCAN tasks USING INDEX tasks_due", "SEARCH (subquery-1)", "SCAN first",
			"SCAN ahead", "SCALAR SUBQUERY 5", "SCAN first"}},
		{`SELECT id FROM tasks WHERE status IN ('sent', 'failed') AND updated_at < ?`,
			[]string{"SEARCH tasks USING INDEX tasks_finished (updated_at<?)"}},
		{pendingTasksSQL, []string{"SEARCH tasks USING COVERING INDEX tasks_user (user_id=? AND status=?)"}},
		{`SELECT count(*) FROM tasks WHERE user_id = ?`, []string{"SEARCH tasks USING COVERING INDEX tasks_user (user_id=?)"}},
		{`SELECT count(*) FROM tasks WHERE user_id = ? AND status = ?`,
			[]string{"SEARCH tasks USING COVERING INDEX tasks_user (user_id=? AND status=?)"}},
		{tasksPageSQL(1), []string{"SEARCH tasks USING INDEX tasks_user (user_id=? AND status=?)"}},
		{tasksPageSQL(len(taskStatuses)), []string{"MERGE (UNION ALL)", "LEFT", "MERGE (UNION ALL)",
			"LEFT", "CO-ROUTINE status_0", "SEARCH tasks USING INDEX tasks_user (user_id=? AND status=?)", "SCAN status_0", "USE TEMP B-TREE FOR ORDER BY",
			"RIGHT", "CO-ROUTINE status_1", "SEARCH tasks USING INDEX tasks_user (user_id=? AND status=?)", "SCAN status_1", "USE TEMP B-TREE FOR ORDER BY",
			"RIGHT", "CO-ROUTINE status_2", "SEARCH tasks USING INDEX tasks_user (user_id=? AND status=?)", "SCAN status_2", "USE TEMP B-TREE FOR ORDER BY"}},
		{`SELECT id, deferred_until FROM tasks WHERE user_id = ? AND status = 'pending' AND deferred_until = next_send_at`,
			[]string{"SEARCH tasks USING INDEX tasks_user (user_id=? AND status=?)"}},
		{`SELECT uuid, length(payload), updated_at, status FROM tasks WHERE user_id = ? ORDER BY id LIMIT ?`,
			[]string{"SEARCH tasks USING INDEX tasks_user (user_id=?)", "USE TEMP B-TREE FOR ORDER BY"}},
		{`DELETE FROM tasks WHERE user_id = ?`, []string{"SEARCH tasks USING INDEX tasks_user (user_id=?)"}},
	} {
		args := []any{time.Now().UnixMilli(), 50, 0}
		for len(args) < strings.Count(c.query, "?") {
			args = append(args, "x")
		}
		rows, err := st.reader.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+c.query, args[:strings.Count(c.query, "?")]...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if strings.Join(plan, "; ") != strings.Join(c.want, "; ") {
			t.Errorf("plan of %s:\n got %q\nwant %q", c.query, plan, c.want)
		}
	}
}
