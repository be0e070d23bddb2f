package store

import (
	"strings"
	"testing"

	"amsg/push/webpush"
)

// The delivery log's reads by time (the prune, the operator's chart) use
// delivery_log_at, the one index an attempt writes on SQLite
// (TestPostgresPrunesReadTheTimeRanges checks PostgreSQL's).
func TestDeliveryLogReadsUseTheTimeIndex(t *testing.T) {
	st, err := Open(t.Context(), Config{Path: t.TempDir() + "/amsg.db", MasterKey: strings.Repeat("a", 64),
		GenerateVAPID: webpush.GenerateVAPIDKeys})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, q := range []string{
		`DELETE FROM delivery_log WHERE at < ?`,
		`SELECT at / 60000 AS minute, outcome, count(*) FROM delivery_log WHERE at >= ? GROUP BY at / 60000, outcome ORDER BY minute, outcome`,
	} {
		rows, err := st.reader.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+q, 1)
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
		if p := strings.Join(plan, "; "); !strings.Contains(p, "USING COVERING INDEX delivery_log_at (at") &&
			!strings.Contains(p, "USING INDEX delivery_log_at (at") {
			t.Errorf("plan of %s: %q, want delivery_log_at", q, p)
		}
	}
}
