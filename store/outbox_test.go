package store_test

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// outboxMessage is a content push of a burst, as a sender records it.
func outboxMessage(id string, index int) store.OutboxMessage {
	return store.OutboxMessage{
		MessageID: id, TaskUUID: "task-1", SessionID: "sess-1", MessageIndex: index, TotalMessages: 3,
		Payload: json.RawMessage(fmt.Sprintf(`{"messageKind":"content","messageId":%q,"message":"part %d"}`, id, index)),
	}
}

func appendOutbox(t *testing.T, st *store.Store, userID string, messages ...store.OutboxMessage) {
	t.Helper()
	if err := st.AppendOutbox(t.Context(), userID, messages); err != nil {
		t.Fatal(err)
	}
}

func unacked(t *testing.T, st *store.Store, userID string, since int64, limit int) store.OutboxPage {
	t.Helper()
	page, err := st.UnackedOutbox(t.Context(), userID, since, limit)
	if err != nil {
		t.Fatal(err)
	}
	return page
}

func messageIDs(page store.OutboxPage) string {
	var ids []string
	for _, e := range page.Entries {
		ids = append(ids, e.MessageID)
	}
	return strings.Join(ids, ",")
}

func TestOutboxAppendAndPage(t *testing.T) {
	clk := newClock()
	st, db := openWithPath(t, store.Config{Now: clk.Now})
	appendOutbox(t, st, alice, outboxMessage("m1", 1), outboxMessage("m2", 2), outboxMessage("m3", 3))
	appendOutbox(t, st, bob, outboxMessage("b1", 1))
	clk.Add(time.Second)
	if err := st.RecordDeliveries(t.Context(), push.Bookkeeping{UserID: alice, Delivered: []string{"m1", "unknown"}}); err != nil {
		t.Fatal(err)
	}

	page := unacked(t, st, alice, 0, 2)
	if messageIDs(page) != "m1,m2" || !page.HasMore || page.Cursor != page.Entries[1].ID {
		t.Fatalf("first page = %s cursor %d more %v, want m1,m2 with more", messageIDs(page), page.Cursor, page.HasMore)
	}
	first := page.Entries[0]
	want := outboxMessage("m1", 1)
	if first.TaskUUID != want.TaskUUID || first.SessionID != want.SessionID || first.MessageIndex != 1 || first.TotalMessages != 3 ||
		string(first.Payload) != string(want.Payload) || !first.CreatedAt.Equal(clk.now.Add(-time.Second)) || !first.DeliveredAt.Equal(clk.now) {
		t.Errorf("first entry = %+v, want m1 as recorded, delivered a second after it was created", first)
	}
	if !page.Entries[1].DeliveredAt.IsZero() {
		t.Errorf("m2 delivered at %v, want zero", page.Entries[1].DeliveredAt)
	}
	next := unacked(t, st, alice, page.Cursor, 2)
	if messageIDs(next) != "m3" || next.HasMore || next.Cursor != next.Entries[0].ID {
		t.Errorf("second page = %s cursor %d more %v, want m3 and no more", messageIDs(next), next.Cursor, next.HasMore)
	}
	end := unacked(t, st, alice, next.Cursor, 2)
	if len(end.Entries) != 0 || end.Entries == nil || end.Cursor != next.Cursor || end.HasMore {
		t.Errorf("past the end = %+v, want an empty page at the same cursor", end)
	}

	var sealed []byte
	if err := db.QueryRow(`SELECT payload FROM message_outbox WHERE message_id = 'm1'`).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if plaintext, err := userKey(t, alice).OpenAtRestBytes(sealed); err != nil || string(plaintext) != string(want.Payload) {
		t.Errorf("stored payload %q opens to %q, %v", sealed, plaintext, err)
	}
}

func TestOutboxAck(t *testing.T) {
	st := storetest.New(t)
	appendOutbox(t, st, alice, outboxMessage("m1", 1), outboxMessage("m2", 2), outboxMessage("m3", 3))
	appendOutbox(t, st, bob, outboxMessage("m1", 1))
	n, err := st.AckOutbox(t.Context(), alice, []string{"m1", "m3", "m3", "nope"})
	if err != nil || n != 2 {
		t.Errorf("AckOutbox = %d, %v; want 2", n, err)
	}
	if n, _ := st.AckOutbox(t.Context(), alice, []string{"m1", "m3"}); n != 0 {
		t.Errorf("repeated ack = %d, want 0", n)
	}
	if got := messageIDs(unacked(t, st, alice, 0, 50)); got != "m2" {
		t.Errorf("unacked after ack = %s, want m2", got)
	}
	if got := messageIDs(unacked(t, st, bob, 0, 50)); got != "m1" {
		t.Errorf("bob's unacked = %s: alice's ack reached bob", got)
	}
	for _, ids := range [][]string{{"ok", " "}, {"\u3000"}, make([]string, store.MaxOutboxIDs+1)} {
		if _, err := st.AckOutbox(t.Context(), alice, ids); !errors.Is(err, store.ErrInvalidOutbox) {
			t.Errorf("AckOutbox(%d ids) = %v, want ErrInvalidOutbox", len(ids), err)
		}
	}
}

// TestOutboxRetryReplacesUnackedRows appends the same messageIds again, as a
// retried occurrence does: an unacknowledged row takes the new payload and is
// undelivered again, an acknowledged one is left alone.
func TestOutboxRetryReplacesUnackedRows(t *testing.T) {
	clk := newClock()
	st, db := openWithPath(t, store.Config{Now: clk.Now})
	appendOutbox(t, st, alice, outboxMessage("m1", 1), outboxMessage("m2", 2))
	if err := st.RecordDeliveries(t.Context(), push.Bookkeeping{UserID: alice, Delivered: []string{"m1", "m2"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AckOutbox(t.Context(), alice, []string{"m2"}); err != nil {
		t.Fatal(err)
	}
	before := unacked(t, st, alice, 0, 50).Entries[0]
	clk.Add(time.Minute)
	retry1, retry2 := outboxMessage("m1", 1), outboxMessage("m2", 2)
	retry1.Payload = json.RawMessage(`{"messageKind":"content","messageId":"m1","message":"regenerated"}`)
	retry2.Payload = retry1.Payload
	appendOutbox(t, st, alice, retry1, retry2)
	page := unacked(t, st, alice, 0, 50)
	if len(page.Entries) != 1 {
		t.Fatalf("unacked = %s, want m1 only: the acked m2 stays acked", messageIDs(page))
	}
	after := page.Entries[0]
	if after.ID != before.ID || string(after.Payload) != string(retry1.Payload) || !after.CreatedAt.Equal(clk.now) || !after.DeliveredAt.IsZero() {
		t.Errorf("retried row = %+v, want the same id with the new payload, created now, undelivered", after)
	}
	var sealed []byte
	var delivered, created int64
	if err := db.QueryRow(`SELECT payload, delivered_at, created_at FROM message_outbox WHERE message_id = 'm2'`).Scan(&sealed, &delivered, &created); err != nil {
		t.Fatal(err)
	}
	if payload, _ := userKey(t, alice).OpenAtRestBytes(sealed); string(payload) != string(outboxMessage("m2", 2).Payload) || created != before.CreatedAt.UnixMilli() {
		t.Errorf("acked row m2 = payload %s created %d delivered %d: a retry changed it", payload, created, delivered)
	}
}

func TestOutboxSkipsRowsThatDoNotDecryptButMovesTheCursor(t *testing.T) {
	logger, logs := logBuffer()
	st, db := openWithPath(t, store.Config{Logger: logger})
	appendOutbox(t, st, alice, outboxMessage("m1", 1), outboxMessage("m2", 2), outboxMessage("m3", 3))
	if _, err := db.Exec(`UPDATE message_outbox SET payload = ? WHERE message_id IN ('m2', 'm3')`, userKey(t, bob).SealAtRestBytes([]byte(`{}`))); err != nil {
		t.Fatal(err)
	}
	page := unacked(t, st, alice, 0, 3)
	var lastID int64
	if err := db.QueryRow(`SELECT max(id) FROM message_outbox`).Scan(&lastID); err != nil {
		t.Fatal(err)
	}
	if messageIDs(page) != "m1" || page.Cursor != lastID || !page.HasMore {
		t.Errorf("page = %s cursor %d more %v; want m1, the cursor past the bad rows (%d), and more (a full page was read)",
			messageIDs(page), page.Cursor, page.HasMore, lastID)
	}
	if !strings.Contains(logs.String(), "does not decrypt") {
		t.Errorf("no warning logged: %s", logs)
	}
}

func TestAppendOutboxRefusesInvalidMessages(t *testing.T) {
	st, db := openWithPath(t, store.Config{})
	good := outboxMessage("m1", 1)
	for _, c := range []struct {
		name   string
		mutate func(*store.OutboxMessage)
	}{
		{"blank id", func(m *store.OutboxMessage) { m.MessageID = " " }},
		{"long id", func(m *store.OutboxMessage) { m.MessageID = strings.Repeat("x", 1025) }},
		{"negative index", func(m *store.OutboxMessage) { m.MessageIndex = -1 }},
		{"payload not JSON", func(m *store.OutboxMessage) { m.Payload = json.RawMessage(`{`) }},
		{"payload an array", func(m *store.OutboxMessage) { m.Payload = json.RawMessage(`[1]`) }},
		{"payload too large", func(m *store.OutboxMessage) {
			m.Payload = json.RawMessage(`{"m":"` + strings.Repeat("x", push.MaxDecodeBytes) + `"}`)
		}},
	} {
		bad := good
		bad.MessageID = "m2"
		c.mutate(&bad)
		if err := st.AppendOutbox(t.Context(), alice, []store.OutboxMessage{good, bad}); !errors.Is(err, store.ErrInvalidOutbox) {
			t.Errorf("%s: err = %v, want ErrInvalidOutbox", c.name, err)
		}
	}
	if n := queryInt(t, db, `SELECT count(*) FROM message_outbox`); n != 0 {
		t.Errorf("%d rows written by refused batches", n)
	}
	for _, c := range []struct {
		since int64
		limit int
	}{{-1, 10}, {0, 0}, {0, store.MaxOutboxPage + 1}} {
		if _, err := st.UnackedOutbox(t.Context(), alice, c.since, c.limit); !errors.Is(err, store.ErrInvalidOutbox) {
			t.Errorf("UnackedOutbox(%d, %d) = %v, want ErrInvalidOutbox", c.since, c.limit, err)
		}
	}
}

func TestCleanupOutboxRetention(t *testing.T) {
	clk := newClock()
	st, db := openWithPath(t, store.Config{Now: clk.Now})
	day := 24 * time.Hour
	appendOutbox(t, st, alice, outboxMessage("old-unacked", 1), outboxMessage("old-acked", 2))
	clk.Add(20 * day)
	appendOutbox(t, st, alice, outboxMessage("acked-8-days", 1), outboxMessage("acked-6-days", 2), outboxMessage("fresh", 3))
	if _, err := st.AckOutbox(t.Context(), alice, []string{"old-acked", "acked-8-days"}); err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * day)
	if _, err := st.AckOutbox(t.Context(), alice, []string{"acked-6-days"}); err != nil {
		t.Fatal(err)
	}
	clk.Add(6*day + time.Hour) // 28 days and an hour after the first batch
	n, err := st.CleanupOutbox(t.Context())
	if err != nil || n != 3 {
		t.Errorf("CleanupOutbox = %d, %v; want 3", n, err)
	}
	rows, err := db.Query(`SELECT message_id FROM message_outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var left []string
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		left = append(left, id)
	}
	if strings.Join(left, ",") != "acked-6-days,fresh" {
		t.Errorf("left after cleanup: %v, want acked-6-days,fresh", left)
	}

	// The ages are configurable.
	clk2 := newClock()
	short := storetest.Open(t, store.Config{Now: clk2.Now, OutboxAckedMaxAge: time.Minute, OutboxMaxAge: time.Hour})
	appendOutbox(t, short, alice, outboxMessage("a", 1), outboxMessage("b", 2))
	if _, err := short.AckOutbox(t.Context(), alice, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	clk2.Add(2 * time.Minute)
	if n, _ := short.CleanupOutbox(t.Context()); n != 1 {
		t.Errorf("with a 1-minute acked age: deleted %d, want 1", n)
	}
	clk2.Add(time.Hour)
	if n, _ := short.CleanupOutbox(t.Context()); n != 1 {
		t.Errorf("with a 1-hour age: deleted %d, want 1", n)
	}
}

// TestOutboxQueriesUseIndexes keeps the page query and the burst's off
// full table scans (TestTimeReadsSeekARowidRange the cleanup, which runs on
// every scheduler tick).
func TestOutboxQueriesUseIndexes(t *testing.T) {
	_, db := openWithPath(t, store.Config{})
	checkPlansUse(t, db, map[string][]string{
		`SELECT id FROM message_outbox WHERE user_id = 'u' AND acked_at IS NULL AND id > 0 ORDER BY id LIMIT 50`:     {"message_outbox_unacked"},
		"SELECT id FROM message_outbox WHERE user_id = 'u' AND message_id >= 'm_' AND message_id < 'm`' ORDER BY id": {"sqlite_autoindex_message_outbox_1"},
	})
}

// checkPlansUse fails t unless SQLite's plan of each query uses each of
// its indexes.
func checkPlansUse(t *testing.T, db *sql.DB, queries map[string][]string) {
	t.Helper()
	for q, indexes := range queries {
		plan := queryPlan(t, db, q)
		for _, ix := range indexes {
			if !strings.Contains(plan, "INDEX "+ix+" ") {
				t.Errorf("%s: plan %q does not use %s", q, plan, ix)
			}
		}
	}
}

// queryPlan returns SQLite's plan of q, its steps joined by "; ", each of
// q's parameters bound to 1.
func queryPlan(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	args := make([]any, strings.Count(q, "?"))
	for i := range args {
		args[i] = 1
	}
	rows, err := db.Query(`EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var id, parent, notUsed int
		var detail string
		if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "; ")
	}
	return plan.String()
}

func TestDiscardUndeliveredOutbox(t *testing.T) {
	st := storetest.New(t)
	other := outboxMessage("other-task", 1)
	other.TaskUUID = "task-2"
	appendOutbox(t, st, alice, outboxMessage("sent", 1), outboxMessage("acked", 2), outboxMessage("pending", 3), other)
	if err := st.RecordDeliveries(t.Context(), push.Bookkeeping{UserID: alice, Delivered: []string{"sent"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AckOutbox(t.Context(), alice, []string{"acked"}); err != nil {
		t.Fatal(err)
	}
	n, err := st.DiscardUndeliveredOutbox(t.Context(), alice, "task-1")
	if err != nil || n != 1 {
		t.Errorf("DiscardUndeliveredOutbox = %d, %v; want 1", n, err)
	}
	if got := messageIDs(unacked(t, st, alice, 0, 50)); got != "sent,other-task" {
		t.Errorf("unacked after discard = %s, want sent,other-task", got)
	}
}

func TestNewOutboxMessage(t *testing.T) {
	content := &push.ContentPush{
		Common: push.Common{
			MessageType: push.TypeFixed, Source: push.SourceScheduled,
			MessageID: "msg_task_7@1700000000000_2", SessionID: "sess_task_7@1700000000000",
			Timestamp:    "2026-03-01T08:00:00.000Z",
			TaskIdentity: push.TaskIdentity{TaskUUID: push.Some("0f8fad5b-d9cb-469f-a165-70867728950e")},
		},
		Message: "hello", MessageIndex: push.Some(2), TotalMessages: push.Some(3),
	}
	m, err := store.NewOutboxMessage(content)
	if err != nil {
		t.Fatal(err)
	}
	encoded, _ := push.Encode(content)
	if m.MessageID != "msg_task_7@1700000000000_2" || m.SessionID != "sess_task_7@1700000000000" ||
		m.TaskUUID != "0f8fad5b-d9cb-469f-a165-70867728950e" || m.MessageIndex != 2 || m.TotalMessages != 3 ||
		string(m.Payload) != string(encoded) {
		t.Errorf("NewOutboxMessage(content) = %+v", m)
	}
	reasoning := &push.ReasoningPush{Common: push.Common{
		MessageType: push.TypeInstant, Source: push.SourceInstant,
		MessageID: "msg_r", SessionID: "sess_r", Timestamp: "2026-03-01T08:00:00.000Z",
	}, ReasoningContent: "thinking"}
	m, err = store.NewOutboxMessage(reasoning)
	if err != nil || m.MessageID != "msg_r" || m.TaskUUID != "" || m.MessageIndex != 0 || m.TotalMessages != 0 {
		t.Errorf("NewOutboxMessage(reasoning) = %+v, %v", m, err)
	}
}

func BenchmarkAppendOutbox(b *testing.B) {
	st := storetest.New(b)
	batch := make([]store.OutboxMessage, 5)
	for i := 0; b.Loop(); i++ {
		for j := range batch {
			batch[j] = outboxMessage(fmt.Sprintf("m%d-%d", i, j), j+1)
		}
		if err := st.AppendOutbox(b.Context(), alice, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// A scheduled occurrence's burst is the rows whose ids start with its
// prefix, and no others: not another task's, not another occurrence's.
func TestBurstOutboxIsExactlyThePrefix(t *testing.T) {
	st := storetest.New(t)
	appendOutbox(t, st, alice,
		outboxMessage("msg_task_1@5_0", 1), outboxMessage("msg_task_1@5_1", 2), outboxMessage("msg_task_1@5_reasoning", 0),
		outboxMessage("msg_task_12@5_0", 1), outboxMessage("msg_task_1@50_0", 1), outboxMessage("msg_task_1@5", 1),
		outboxMessage("msg_task_1@5`", 1))
	appendOutbox(t, st, bob, outboxMessage("msg_task_1@5_2", 3))
	if err := st.RecordDeliveries(t.Context(), push.Bookkeeping{UserID: alice, Delivered: []string{"msg_task_1@5_0"}}); err != nil {
		t.Fatal(err)
	}
	burst := func() string {
		entries, err := st.BurstOutbox(t.Context(), alice, "msg_task_1@5_")
		if err != nil {
			t.Fatal(err)
		}
		return messageIDs(store.OutboxPage{Entries: entries})
	}
	if got := burst(); got != "msg_task_1@5_0,msg_task_1@5_1,msg_task_1@5_reasoning" {
		t.Errorf("burst = %s", got)
	}
	if n, err := st.DiscardUndeliveredBurst(t.Context(), alice, "msg_task_1@5_"); err != nil || n != 2 {
		t.Errorf("DiscardUndeliveredBurst = %d, %v; want 2", n, err)
	}
	if got := burst(); got != "msg_task_1@5_0" {
		t.Errorf("burst after the discard = %s, want the delivered push only", got)
	}
	if got := messageIDs(unacked(t, st, bob, 0, 50)); got != "msg_task_1@5_2" {
		t.Errorf("bob's outbox = %s", got)
	}
	for _, prefix := range []string{"", "msg~", "msg_é", strings.Repeat("m", 1025)} {
		if _, err := st.BurstOutbox(t.Context(), alice, prefix); !errors.Is(err, store.ErrInvalidOutbox) {
			t.Errorf("BurstOutbox(%q): %v, want ErrInvalidOutbox", prefix, err)
		}
	}
}

// A push sent before the outbox held it is recorded delivered with its
// attempts; a row already there (an earlier attempt's) becomes delivered,
// and one the client acknowledged stays as it is.
func TestRecordDeliveriesRecordsPushesSentFirst(t *testing.T) {
	st := storetest.New(t)
	appendOutbox(t, st, alice, outboxMessage("earlier", 1), outboxMessage("acked", 2))
	if _, err := st.AckOutbox(t.Context(), alice, []string{"acked"}); err != nil {
		t.Fatal(err)
	}
	err := st.RecordDeliveries(t.Context(), push.Bookkeeping{UserID: alice,
		Record:   []store.OutboxMessage{outboxMessage("new", 3), outboxMessage("earlier", 1), outboxMessage("acked", 2)},
		Attempts: []push.Attempt{{MessageID: "new", UserID: alice, DeviceID: 7, Try: 1, Status: 201, Outcome: push.OutcomeDelivered}}})
	if err != nil {
		t.Fatal(err)
	}
	page := unacked(t, st, alice, 0, 50)
	if got := messageIDs(page); got != "earlier,new" {
		t.Fatalf("unacked = %s, want earlier,new", got)
	}
	for _, e := range page.Entries {
		if e.DeliveredAt.IsZero() || string(e.Payload) != string(outboxMessage(e.MessageID, e.MessageIndex).Payload) {
			t.Errorf("%s: delivered at %v, payload %s", e.MessageID, e.DeliveredAt, e.Payload)
		}
	}
	if attempts, err := st.Attempts(t.Context(), "new"); err != nil || len(attempts) != 1 || attempts[0].DeviceID != 7 {
		t.Errorf("attempts of new = %+v, %v", attempts, err)
	}
	bad := outboxMessage("bad", 1)
	bad.Payload = json.RawMessage(`[]`)
	if err := st.RecordDeliveries(t.Context(), push.Bookkeeping{UserID: alice, Record: []store.OutboxMessage{bad}}); !errors.Is(err, store.ErrInvalidOutbox) {
		t.Errorf("recording an invalid push: %v, want ErrInvalidOutbox", err)
	}
}

// Issue 22, finding 11: each user's outbox is capped; the rows over the cap
// go delivered (or acknowledged) ones first, oldest first, and another
// user's rows are not touched.
func TestCleanupOutboxCapsEachUser(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now, OutboxMaxRowsPerUser: 3})
	ctx := t.Context()
	appendOutbox(t, st, alice, outboxMessage("a1", 1), outboxMessage("a2", 2), outboxMessage("a3", 3))
	appendOutbox(t, st, alice, outboxMessage("a4", 1), outboxMessage("a5", 2))
	appendOutbox(t, st, bob, outboxMessage("b1", 1), outboxMessage("b2", 2), outboxMessage("b3", 3))
	if err := st.RecordDeliveries(ctx, push.Bookkeeping{UserID: alice, Delivered: []string{"a1", "a3", "a4"}}); err != nil {
		t.Fatal(err)
	}
	n, err := st.CleanupOutbox(ctx)
	if err != nil || n != 2 {
		t.Fatalf("CleanupOutbox = %d, %v; want 2", n, err)
	}
	var left []string
	for _, m := range unacked(t, st, alice, 0, 50).Entries {
		left = append(left, m.MessageID)
	}
	// a2 and a5 were never delivered: kept; of the delivered, the newest.
	if strings.Join(left, ",") != "a2,a4,a5" {
		t.Errorf("alice keeps %v, want a2,a4,a5", left)
	}
	if got := unacked(t, st, bob, 0, 50).Entries; len(got) != 3 {
		t.Errorf("bob, at the cap, keeps %d rows", len(got))
	}
}
