package store_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// Issue 22 §11, the soak: under steady load the database levels off. A
// simulated day, ten minutes at a time on an injected clock, of what a busy
// server writes (one-off tasks delivered with their outbox row and delivery
// attempt, some failing; /instant rounds with their transcript and pushes),
// with the housekeeping after each step, as the scheduler runs it. The
// caps are scaled down (200 outbox rows per user, 1 000 log rows, 6 h of
// transcripts and failed tasks) so the plateau comes within the day; each
// is a setting with the same code behind it as its default. From the
// 12th hour on, the rows and the file stop growing, though a third of the
// day's writes came after it.
func TestSoakTheDatabaseLevelsOff(t *testing.T) {
	if testing.Short() {
		t.Skip("a simulated day of load")
	}
	if _, url := storetest.Database(t); url != "" {
		t.Skip("the figure is SQLite's file; PostgreSQL runs the same prune steps in the rest of the suite")
	}
	clk := newClock()
	path := filepath.Join(t.TempDir(), "amsg.db")
	st := storetest.Open(t, store.Config{Path: path, Now: clk.Now, OutboxMaxRowsPerUser: 200, DeliveryLogMaxRows: 1000})
	db := rawDB(t, path)
	ctx := t.Context()
	retention := store.Retention{FinishedTasks: 6 * time.Hour, Transcripts: 6 * time.Hour}
	users := []string{alice, bob, "0f8fad5b-d9cb-469f-a165-70867728950e", "9b2f1c3e-4d5a-4b6c-8d7e-0f1a2b3c4d5e", "123e4567-e89b-42d3-a456-426614174000"}
	reply := strings.Repeat("a reply of about three hundred characters. ", 7)
	const steps, stepsPerHour, tasksPerStep, roundsPerStep = 144, 6, 20, 4
	type sample struct {
		rows  map[string]int
		bytes int64
	}
	var hourly []sample
	n := 0
	for step := range steps {
		now := clk.Now()
		for range tasksPerStep {
			n++
			user := users[n%len(users)]
			insertTask(t, st, user, n, now)
		}
		due, err := st.ClaimDueTasks(ctx, now, 90*time.Second, tasksPerStep)
		if err != nil || len(due) != tasksPerStep {
			t.Fatalf("step %d: claimed %d, %v", step, len(due), err)
		}
		for i, task := range due {
			if i%10 == 0 {
				if err := st.FailTask(ctx, task.Lease(), 3, json.RawMessage(`{"error":"push service down"}`)); err != nil {
					t.Fatal(err)
				}
				continue
			}
			id := fmt.Sprintf("msg_%s_%d", task.UUID, step)
			msg := push.OutboxMessage{MessageID: id, TaskUUID: task.UUID, MessageIndex: 1, TotalMessages: 1,
				Payload: json.RawMessage(fmt.Sprintf(`{"messageKind":"content","messageId":%q,"message":%q}`, id, reply))}
			if err := st.CompleteTask(ctx, task.Lease(), time.Time{}, push.Bookkeeping{UserID: task.UserID, Record: []push.OutboxMessage{msg},
				Delivered: []string{id}, Attempts: []push.Attempt{{At: now, MessageID: id, UserID: task.UserID, PushHost: "push.example",
					Try: 1, Status: 201, Outcome: push.OutcomeDelivered, Latency: 40 * time.Millisecond}}}); err != nil {
				t.Fatal(err)
			}
		}
		for r := range roundsPerStep {
			user, session := users[r%len(users)], fmt.Sprintf("sess-%d-%d", step, r)
			var entries []store.TranscriptEntry
			for i, typ := range []string{"input", "reasoning", "reply"} {
				entries = append(entries, store.TranscriptEntry{ID: fmt.Sprintf("01J%07d%016d", step, 3*r+i), At: now, Type: typ,
					Body: json.RawMessage(fmt.Sprintf(`{"text":%q}`, reply))})
			}
			if _, err := st.AppendTranscript(ctx, store.TranscriptAppend{Owner: user, SessionID: session, After: store.AnySeq, Entries: entries}); err != nil {
				t.Fatal(err)
			}
			id := "msg_" + session
			if err := st.RecordDeliveries(ctx, push.Bookkeeping{UserID: user, Record: []push.OutboxMessage{{MessageID: id, SessionID: session,
				Payload: json.RawMessage(fmt.Sprintf(`{"messageKind":"content","messageId":%q,"message":%q}`, id, reply))}},
				Delivered: []string{id}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.Prune(ctx, clk.Now(), retention); err != nil {
			t.Fatal(err)
		}
		clk.Add(10 * time.Minute)
		if (step+1)%stepsPerHour == 0 {
			hourly = append(hourly, sample{soakRows(t, db), soakFileBytes(t, db)})
		}
	}
	for h, s := range hourly {
		if h%3 == 2 {
			t.Logf("hour %2d: %d bytes, rows %v", h+1, s.bytes, s.rows)
		}
	}
	half := hourly[11]
	for h, s := range hourly[12:] {
		for table, rows := range s.rows {
			if rows > half.rows[table]+half.rows[table]/20 {
				t.Errorf("hour %d: %s has %d rows, %d at hour 12", h+13, table, rows, half.rows[table])
			}
		}
		if s.bytes > half.bytes+half.bytes/20 {
			t.Errorf("hour %d: the database takes %d bytes, %d at hour 12", h+13, s.bytes, half.bytes)
		}
	}
	if written := n; half.rows["tasks"]*10 > written {
		t.Errorf("%d tasks kept of %d written: the test did not outlast the retention", half.rows["tasks"], written)
	}
}

// soakTables are the tables steady load writes.
var soakTables = []string{"tasks", "message_outbox", "delivery_log", "transcript_sessions", "transcript_entries"}

// soakRows counts the rows of soakTables.
func soakRows(t *testing.T, db *sql.DB) map[string]int {
	t.Helper()
	rows := map[string]int{}
	for _, table := range soakTables {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		rows[table] = n
	}
	return rows
}

// soakFileBytes is the database's size in pages as of now, the WAL's
// pages included: what the file takes once checkpointed (freed pages stay
// in it for reuse, so this is the figure that must level off). The WAL
// file itself is bounded by its ceiling (diskfull.go).
func soakFileBytes(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var pages, pageSize int64
	if err := db.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	return pages * pageSize
}
