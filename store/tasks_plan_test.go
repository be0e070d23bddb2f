package store

import (
	"strings"
	"testing"
	"time"

	"amsg/push/webpush"
)

// The scheduler claims with one range scan of tasks_due and never sorts, and
// the cleanup reads the partial index of finished rows, and the task quota
// counts on the partial index of pending tasks alone, whatever the table
// holds.
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
		{`SELECT id FROM tasks WHERE status = 'pending' AND ` + st.dialect.ClaimableAt + ` <= ? ORDER BY ` + st.dialect.ClaimableAt + `, id LIMIT ?`,
			[]string{"SEARCH tasks USING INDEX tasks_due (<expr><?)"}},
		{`SELECT min(` + st.dialect.ClaimableAt + `) FROM tasks WHERE status = 'pending'`,
			[]string{"SEARCH tasks USING INDEX tasks_due"}},
		{`SELECT id FROM tasks WHERE status IN ('sent', 'failed') AND updated_at < ?`,
			[]string{"SEARCH tasks USING INDEX tasks_finished (updated_at<?)"}},
		{`SELECT ` + taskColumns + ` FROM tasks WHERE user_id = ? ORDER BY next_send_at, id LIMIT ? OFFSET ?`,
			[]string{"SEARCH tasks USING INDEX tasks_user (user_id=?)"}},
		{pendingTasksSQL, []string{"SEARCH tasks USING COVERING INDEX tasks_pending_user (user_id=?)"}},
	} {
		rows, err := st.reader.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+c.query, time.Now().UnixMilli(), 50, 0)
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
