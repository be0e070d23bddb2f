package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"amsg/push"
)

// groupedCompletions inserts and claims n one-off tasks of user "u" due at
// now and returns their completions as SQLite's writer hands a group of
// them to the completions' kind: each records its push in the outbox with
// one attempt (recorded[i] names the message of completion i).
func groupedCompletions(t *testing.T, st *Store, now time.Time, recorded ...string) []*combinedWrite[completion] {
	t.Helper()
	ctx := t.Context()
	for i := range recorded {
		if _, _, err := st.InsertTask(ctx, NewTask{UserID: "u", UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
			MessageType: push.TypeFixed, NextSendAt: now, Payload: json.RawMessage(`{"userMessage":"hi"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	claimed, err := st.ClaimDueTasks(ctx, now, time.Minute, len(recorded))
	if err != nil || len(claimed) != len(recorded) {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	group := make([]*combinedWrite[completion], len(claimed))
	for i, task := range claimed {
		id := recorded[i]
		w, err := st.prepareBookkeeping(push.Bookkeeping{UserID: "u",
			Record:   []push.OutboxMessage{{MessageID: id, Payload: json.RawMessage(`{"message":"hi"}`)}},
			Attempts: []push.Attempt{{MessageID: id, UserID: "u", DeviceID: 1, Try: 1, Status: 201, Outcome: push.OutcomeDelivered}}})
		if err != nil {
			t.Fatal(err)
		}
		group[i] = &combinedWrite[completion]{req: completion{l: task.Lease(), w: w}}
	}
	return group
}

// combineIn runs group as SQLite's writer runs a group's completions: one
// call of their kind, in a write.
func combineIn(t *testing.T, st *Store, group []*combinedWrite[completion]) error {
	items := make([]any, len(group))
	for i, c := range group {
		items[i] = c
	}
	return st.write(t.Context(), func(tx *sql.Tx) error { return st.completions.kind.Combine(t.Context(), tx, items) })
}

// On SQLite the completions a group commits go in one call of their kind
// (multi-row statements), and each still comes out as if alone: the one
// whose lease another claimer took gets ErrLeaseLost and keeps its task
// and that lease; the one whose task its owner moved gets ErrLeaseLost,
// keeps its task at the new time and has its lease released; the others
// are deleted; every push's attempt, outbox row and events are written,
// the events in the group's order.
func TestAGroupsCompletionsComeOutEachAsAlone(t *testing.T) {
	st := openInternal(t)
	if st.completions.kind == nil {
		t.Fatal("SQLite's completions are not a combined kind")
	}
	ctx := t.Context()
	now := time.Now()
	group := groupedCompletions(t, st, now, "m0", "m1", "m2", "m3", "m4")
	stolen, moved := group[1].req.l, group[3].req.l
	if _, err := st.RenewLease(ctx, stolen, now.Add(time.Hour)); err != nil { // as another claimer's lease
		t.Fatal(err)
	}
	if err := st.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE tasks SET next_send_at = next_send_at + 60000 WHERE id = ?`, moved.TaskID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := combineIn(t, st, group); err != nil {
		t.Fatal(err)
	}
	var lastSeq int64
	for i, c := range group {
		if lost := i == 1 || i == 3; errors.Is(c.outcome, ErrLeaseLost) != lost || (!lost && c.outcome != nil) {
			t.Errorf("completion %d: outcome %v", i, c.outcome)
		}
		id := fmt.Sprintf("m%d", i)
		if attempts, err := st.Attempts(ctx, id); err != nil || len(attempts) != 1 {
			t.Errorf("attempts of %s = %v, %v; want one", id, attempts, err)
		}
		story, err := st.MessageTimeline(ctx, "u", id)
		var types []string
		for _, e := range story {
			types = append(types, e.Type)
		}
		if err != nil || !slices.Equal(types, []string{"queued", "sent", "accepted"}) || story[0].Seq <= lastSeq {
			t.Errorf("timeline of %s = %+v, %v; want queued, sent, accepted after the events of the one before", id, story, err)
		}
		lastSeq = story[len(story)-1].Seq
	}
	page, err := st.UnackedOutbox(ctx, "u", 0, 10)
	if err != nil || len(page.Entries) != len(group) {
		t.Errorf("outbox: %+v, %v; want every push", page, err)
	}
	leases := map[int64]sql.NullInt64{}
	rows, err := st.reader.QueryContext(ctx, `SELECT id, lease_until FROM tasks`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var lease sql.NullInt64
		if err := rows.Scan(&id, &lease); err != nil {
			t.Fatal(err)
		}
		leases[id] = lease
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(leases) != 2 || !leases[stolen.TaskID].Valid || leases[moved.TaskID].Valid {
		t.Errorf("tasks left %v, want the stolen one still leased and the moved one released", leases)
	}
}

// A call of several completions that fails (two record the same message,
// which one multi-row upsert may not change twice) fails as a whole, so
// the writer undoes it and runs each alone: alone, each is written.
func TestAGroupsCompletionsThatCannotGoTogetherGoAlone(t *testing.T) {
	st := openInternal(t)
	group := groupedCompletions(t, st, time.Now(), "same", "same")
	if err := combineIn(t, st, group); !errors.Is(err, errRepeatedInBatch) {
		t.Fatalf("call of both: %v, want errRepeatedInBatch", err)
	}
	for i, c := range group {
		if err := combineIn(t, st, group[i:i+1]); err != nil || c.outcome != nil {
			t.Errorf("completion %d alone: %v, outcome %v", i, err, c.outcome)
		}
	}
	if attempts, err := st.Attempts(t.Context(), "same"); err != nil || len(attempts) != 2 {
		t.Errorf("attempts %v, %v; want both", attempts, err)
	}
	if n, err := st.PendingTasks(t.Context(), "u"); err != nil || n != 0 {
		t.Errorf("pending tasks %d, %v; want none", n, err)
	}
}
