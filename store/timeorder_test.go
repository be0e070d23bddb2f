package store_test

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// searchTable is a table of rows appended with the times ats (ids from 1),
// then the rows of ids deleted deleted.
func searchTable(t *testing.T, ats []int64, deleted ...int64) *sql.DB {
	t.Helper()
	db := rawDB(t, filepath.Join(t.TempDir(), "search.db"))
	if _, err := db.Exec(`CREATE TABLE rows (id INTEGER PRIMARY KEY, at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i, at := range ats {
		if _, err := tx.Exec(`INSERT INTO rows (id, at) VALUES (?, ?)`, i+1, at); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range deleted {
		if _, err := tx.Exec(`DELETE FROM rows WHERE id = ?`, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return db
}

// rowsAt reads the table's rows, by id.
func rowsAt(t *testing.T, db *sql.DB) (ids, ats []int64) {
	t.Helper()
	rows, err := db.Query(`SELECT id, at FROM rows ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, at int64
		if err := rows.Scan(&id, &at); err != nil {
			t.Fatal(err)
		}
		ids, ats = append(ids, id), append(ats, at)
	}
	return ids, ats
}

func search(t *testing.T, db *sql.DB, x int64, extreme string) int64 {
	t.Helper()
	b, err := store.SearchRows(t.Context(), db, "rows", "at", x, extreme)
	if err != nil {
		t.Fatalf("SearchRows(%d, %s): %v", x, extreme, err)
	}
	return b
}

// checkSplit checks the search's promise for rows at most slack out of
// order, the row at index skip (-1 for none) aside: with "max" every row
// before the result is before x+slack, with "min" every row from it on is
// at x-slack or later; and, unless perSlack is negative, that the range is
// tight: at most probeRows rows (eight), plus the perSlack rows the slack
// spans on either side, lie on the wrong side of x.
func checkSplit(t *testing.T, db *sql.DB, ids, ats []int64, x, slack int64, perSlack, skip int) {
	t.Helper()
	for _, extreme := range []string{"max", "min"} {
		b := search(t, db, x, extreme)
		extra := 0
		for i, id := range ids {
			if i == skip {
				continue
			}
			before := id < b
			switch {
			case extreme == "max" && before && ats[i] >= x+slack:
				t.Errorf("max, x %d: row %d (at %d) is before the result %d", x, id, ats[i], b)
			case extreme == "min" && !before && ats[i] < x-slack:
				t.Errorf("min, x %d: row %d (at %d) is past the result %d", x, id, ats[i], b)
			case extreme == "max" && !before && ats[i] < x, extreme == "min" && before && ats[i] >= x:
				extra++
			}
		}
		if limit := 8 + 2*perSlack + 1; perSlack >= 0 && extra > limit {
			t.Errorf("%s, x %d: %d rows on the wrong side of the result %d, want at most %d", extreme, x, extra, b, limit)
		}
	}
}

// The rowid search alone, on a table of its own: its edge cases, rows out
// of order within a slack, one row far out of order, rows deleted.
func TestSearchRowsSplitsTheRowsAtAnInstant(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		db := searchTable(t, nil)
		for _, extreme := range []string{"max", "min"} {
			if b := search(t, db, 5, extreme); b != 0 {
				t.Errorf("%s on an empty table = %d, want 0", extreme, b)
			}
		}
	})
	ordered := make([]int64, 100)
	for i := range ordered {
		ordered[i] = int64(i+1) * 10 // row id i+1 at 10·(i+1)
	}
	t.Run("all older", func(t *testing.T) {
		db := searchTable(t, ordered)
		for _, extreme := range []string{"max", "min"} {
			if b := search(t, db, 5000, extreme); b != 101 {
				t.Errorf("%s with every row older = %d, want 101 (past the last)", extreme, b)
			}
		}
	})
	t.Run("all newer", func(t *testing.T) {
		db := searchTable(t, ordered, 1, 2, 3)
		for _, extreme := range []string{"max", "min"} {
			if b := search(t, db, 0, extreme); b != 4 {
				t.Errorf("%s with every row newer = %d, want 4 (the first left)", extreme, b)
			}
		}
	})
	t.Run("in order, with rows deleted", func(t *testing.T) {
		var gap []int64
		for id := int64(40); id <= 70; id++ {
			gap = append(gap, id)
		}
		db := searchTable(t, ordered, gap...)
		if b := search(t, db, 555, "min"); b < 40 || b > 71 {
			t.Errorf("min at 555 = %d, want 40 to 71 (the first row left at or past it is 71)", b)
		}
		ids, ats := rowsAt(t, db)
		for x := int64(0); x <= 1010; x += 5 {
			checkSplit(t, db, ids, ats, x, 0, 0, -1)
		}
	})
	t.Run("out of order within the slack", func(t *testing.T) {
		const slack = 5000 // each row up to 5 rows' time older than its place
		rng := rand.New(rand.NewPCG(1, 2))
		ats := make([]int64, 2000)
		for i := range ats {
			ats[i] = int64(i)*1000 - rng.Int64N(slack+1)
		}
		db := searchTable(t, ats)
		ids, ats := rowsAt(t, db)
		for x := int64(-10_000); x <= 2_010_000; x += 7919 {
			checkSplit(t, db, ids, ats, x, slack, slack/1000, -1)
		}
	})
	t.Run("one row far out of order", func(t *testing.T) {
		// A row written far later than its time, or whose time moved on
		// (a retried outbox row), can widen the range (a prune's, a
		// read's), never cut it short.
		for _, far := range []int64{0, 1 << 40} {
			for _, at := range []int{10, 31, 50, 77} {
				ats := append([]int64(nil), ordered...)
				ats[at] = far
				db := searchTable(t, ats)
				ids, ats := rowsAt(t, db)
				for x := int64(0); x <= 1010; x += 10 {
					checkSplit(t, db, ids, ats, x, 0, -1, at)
				}
			}
		}
	})
}

// Every read by time of the delivery log, the message events and the
// outbox on SQLite seeks its rowid range, the search's reads of the first
// and last rowids seek them, and no statement scans a whole table: the
// time indexes are gone (appendOrderedSchema).
// TestPostgresPrunesReadTheTimeRanges checks PostgreSQL's.
func TestTimeReadsSeekARowidRange(t *testing.T) {
	st, db := openWithPath(t, store.Config{})
	for name, q := range st.TimeReadsSQL() {
		p := queryPlan(t, db, q)
		if !strings.HasPrefix(name, "bounds") && !strings.Contains(p, "USING INTEGER PRIMARY KEY (rowid") {
			t.Errorf("%s: plan %q does not seek a rowid range", name, p)
		}
		if strings.HasPrefix(name, "cleanup outbox") && !strings.Contains(p, "INDEX message_outbox_acked ") {
			t.Errorf("%s: plan %q does not read the acknowledged rows by message_outbox_acked", name, p)
		}
		for _, table := range []string{"delivery_log", "message_events", "message_outbox", "u", "d"} {
			if strings.Contains(p, "SCAN "+table+";") || strings.Contains(p, "SCAN "+table+" ") {
				t.Errorf("%s: plan %q scans %s whole", name, p, table)
			}
		}
	}
	var indexes []string
	if err := func() error {
		rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'index' AND name IN
			('message_events_at', 'delivery_log_at', 'message_outbox_created')`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				return err
			}
			indexes = append(indexes, name)
		}
		return rows.Err()
	}(); err != nil {
		t.Fatal(err)
	}
	if len(indexes) != 0 {
		t.Errorf("time indexes left on SQLite: %v", indexes)
	}
}

// timedHistory writes n times, step apart from the clock's now, an attempt
// and an event stamped late before the write (writes of ten by ten
// alternately on time and late, so that a probe can land on a run of late
// rows), and an outbox row created at the write, alternately failed and
// delivered, and returns the attempts' and events' times (the outbox rows'
// are the writes').
func timedHistory(t *testing.T, st *store.Store, clk *clock, n int, step, late time.Duration) (stamps []time.Time) {
	t.Helper()
	ctx := t.Context()
	for i := range n {
		at := clk.now
		if i/10%2 == 1 {
			at = at.Add(-late)
		}
		id := fmt.Sprintf("m%d", i)
		outcome, status := push.OutcomeDelivered, 201
		if i%2 == 0 {
			outcome, status = push.OutcomeFailed, 400
		}
		if err := st.RecordDeliveries(ctx, push.Bookkeeping{Attempts: []push.Attempt{{At: at, MessageID: id, UserID: alice,
			DeviceID: 1, PushHost: "push.example", Try: 1, Status: status, Outcome: outcome}}}); err != nil {
			t.Fatal(err)
		}
		if err := st.AppendMessageEvents(ctx, store.MessageEvent{At: at, UserID: alice, MessageID: id, Type: store.EventShown}); err != nil {
			t.Fatal(err)
		}
		appendOutbox(t, st, alice, outboxMessage(id, 0))
		stamps = append(stamps, at)
		clk.Add(step)
	}
	return stamps
}

// The reads by time answer as a scan of every row would, with rows written
// 50 minutes after their time beside rows written on time, on both backends: the per-minute
// chart, the failed attempts, the daily chart.
func TestTimeReadsFindRowsWrittenLate(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	stamps := timedHistory(t, st, clk, 300, time.Minute, 50*time.Minute)
	for back := -400 * time.Minute; back <= 0; back += 7*time.Minute + 30*time.Second {
		since := clk.now.Add(back)
		perMinute := map[time.Time]map[push.Outcome]int{}
		var failed []time.Time
		shown := map[time.Time]int{}
		for i, at := range stamps {
			if at.Before(since) {
				continue
			}
			outcome := push.OutcomeDelivered
			if i%2 == 0 {
				outcome = push.OutcomeFailed
				failed = append(failed, at)
			}
			minute := at.Truncate(time.Minute)
			if perMinute[minute] == nil {
				perMinute[minute] = map[push.Outcome]int{}
			}
			perMinute[minute][outcome]++
			shown[at.UTC().Truncate(24*time.Hour)]++
		}
		counts, err := st.AttemptsPerMinute(ctx, since)
		if err != nil {
			t.Fatal(err)
		}
		got := map[time.Time]map[push.Outcome]int{}
		for _, c := range counts {
			if got[c.Minute] == nil {
				got[c.Minute] = map[push.Outcome]int{}
			}
			got[c.Minute][c.Outcome] = c.Count
		}
		if fmt.Sprint(got) != fmt.Sprint(perMinute) {
			t.Errorf("since %s: AttemptsPerMinute = %v, want %v", since.Format(time.TimeOnly), got, perMinute)
		}
		slices.SortFunc(failed, func(a, b time.Time) int { return b.Compare(a) })
		for _, limit := range []int{10, store.MaxAdminPage} {
			attempts, err := st.FailedAttempts(ctx, since, limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []time.Time
			for _, a := range attempts {
				got = append(got, a.At)
			}
			if want := failed[:min(len(failed), limit)]; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("since %s, limit %d: failed attempts at %v, want %v", since.Format(time.TimeOnly), limit, got, want)
			}
		}
		days, err := st.EventsPerDay(ctx, since, []string{store.EventShown})
		if err != nil {
			t.Fatal(err)
		}
		gotDays := map[time.Time]int{}
		for _, d := range days {
			gotDays[d.Day] = d.Count
		}
		if fmt.Sprint(gotDays) != fmt.Sprint(shown) {
			t.Errorf("since %s: EventsPerDay = %v, want %v", since.Format(time.TimeOnly), gotDays, shown)
		}
	}
}

// The prunes delete exactly the rows older than their cutoffs, at each of
// 300 cutoffs 5 s apart, when rows are written 55 s after their time beside
// rows written on time, 50 s out of order (within pruneSlack), on both
// backends; an outbox row whose retry replaced its created_at does not
// hold the outbox's prune back; a row written 30 minutes late is deleted
// once the rows written beside it are older than the cutoff.
func TestPrunesDeleteRowsWrittenLate(t *testing.T) {
	clk := newClock()
	const writes, step, keep = 300, 5 * time.Second, 25 * time.Minute // keep: the whole history
	st := storetest.Open(t, store.Config{Now: clk.Now, DeliveryLogMaxAge: keep, OutboxMaxAge: keep})
	ctx := t.Context()
	start := clk.now
	stamps := timedHistory(t, st, clk, writes, step, 55*time.Second)
	appendOutbox(t, st, alice, outboxMessage("m5", 0)) // a retry: created now, at its first rowid
	var attempts, events int
	for range writes {
		clk.Add(step)
		cutoff := clk.now.Add(-keep)
		var older, written int
		for i, at := range stamps {
			if at.Before(cutoff) {
				older++
			}
			if start.Add(time.Duration(i) * step).Before(cutoff) {
				written++
			}
		}
		n, err := st.PruneDeliveryLog(ctx)
		if attempts += n; err != nil || attempts != older {
			t.Fatalf("cutoff %s: PruneDeliveryLog deleted %d in all, %v; want %d", cutoff.Format(time.TimeOnly), attempts, err, older)
		}
		// The shown events as the attempts, and a queued event a write.
		n, err = st.PruneMessageEvents(ctx)
		if events += n; err != nil || events != older+written {
			t.Fatalf("cutoff %s: PruneMessageEvents deleted %d in all, %v; want %d", cutoff.Format(time.TimeOnly), events, err, older+written)
		}
	}
	if n, err := st.CleanupOutbox(ctx); err != nil || n != writes-1 {
		t.Errorf("CleanupOutbox = %d, %v; want %d (all but the retried m5)", n, err, writes-1)
	}
	if left := unacked(t, st, alice, 0, store.MaxOutboxPage); len(left.Entries) != 1 || left.Entries[0].MessageID != "m5" {
		t.Errorf("the outbox holds %d rows, want the retried m5 alone", len(left.Entries))
	}

	late := clk.now.Add(-30 * time.Minute)
	if err := st.RecordDeliveries(ctx, push.Bookkeeping{Attempts: []push.Attempt{{At: late, MessageID: "late", Outcome: push.OutcomeDelivered}}}); err != nil {
		t.Fatal(err)
	}
	timedHistory(t, st, clk, 20, time.Minute, 0)
	clk.now = clk.now.Add(-20 * time.Minute).Add(keep) // the cutoff: the late row's write, 20 writes ago
	if _, err := st.PruneDeliveryLog(ctx); err != nil {
		t.Fatal(err)
	}
	if left, err := st.Attempts(ctx, "late"); err != nil || len(left) != 0 {
		t.Errorf("the attempt written 30 minutes late is left once its write is past the cutoff: %+v, %v", left, err)
	}
}
