package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/webpush"
)

func openInternal(t *testing.T) *Store {
	t.Helper()
	st, err := Open(t.Context(), Config{Path: t.TempDir() + "/amsg.db", MasterKey: strings.Repeat("a", 64),
		GenerateVAPID: webpush.GenerateVAPIDKeys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func TestWriteAfterCloseFails(t *testing.T) {
	st := openInternal(t)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordDeliveries(t.Context(), push.Bookkeeping{Attempts: []push.Attempt{{MessageID: "m"}}}); !errors.Is(err, errClosed) {
		t.Errorf("write after Close: %v, want errClosed", err)
	}
}

// A batch of one-off completions is one write: the fenced ones are
// deleted, the one whose fence fails keeps its task and gets ErrLeaseLost,
// and every attempt is written.
func TestCompleteBatchFencesEachCompletion(t *testing.T) {
	st := openInternal(t)
	ctx := t.Context()
	now := time.Now()
	var batch []*pendingWrite[completion]
	for i := range 3 {
		task, _, err := st.InsertTask(ctx, NewTask{UserID: "u", UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
			MessageType: push.TypeFixed, NextSendAt: now, Payload: json.RawMessage(`{"userMessage":"hi"}`)})
		if err != nil {
			t.Fatal(err)
		}
		w, err := st.prepareBookkeeping(push.Bookkeeping{UserID: "u", Attempts: []push.Attempt{{MessageID: fmt.Sprintf("m%d", i), Outcome: push.OutcomeDelivered}}})
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, &pendingWrite[completion]{ctx: ctx, req: completion{l: task.Lease(), w: w}, done: make(chan error, 1)})
	}
	claimed, err := st.ClaimDueTasks(ctx, now, time.Minute, 3)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	for i, task := range claimed {
		if i < 2 { // the first two complete under their lease; the third under none
			batch[i].req.l = task.Lease()
		}
	}
	st.completions.handle(batch)
	for i, c := range batch {
		err := <-c.done
		if want := i == 2; errors.Is(err, ErrLeaseLost) != want || (!want && err != nil) {
			t.Errorf("completion %d: %v", i, err)
		}
		if attempts, err := st.Attempts(ctx, fmt.Sprintf("m%d", i)); err != nil || len(attempts) != 1 {
			t.Errorf("attempts of m%d = %v, %v", i, attempts, err)
		}
	}
	if n, err := st.PendingTasks(ctx, "u"); err != nil || n != 1 {
		t.Errorf("pending tasks %d, %v; want the unfenced one", n, err)
	}
}

// A batch of outbox appends is one multi-row upsert; a batch in which two
// appends name the same message is written append by append, the later
// one last, as if each had come alone.
func TestAppendBatchWritesEveryMessage(t *testing.T) {
	st := openInternal(t)
	ctx := t.Context()
	pending := func(userID, id, text string) *pendingWrite[outboxAppend] {
		m := OutboxMessage{MessageID: id, Payload: json.RawMessage(fmt.Sprintf(`{"message":%q}`, text))}
		sealed, err := st.sealOutbox(userID, []OutboxMessage{m})
		if err != nil {
			t.Fatal(err)
		}
		return &pendingWrite[outboxAppend]{ctx: ctx, done: make(chan error, 1),
			req: outboxAppend{userID: userID, messages: []OutboxMessage{m}, sealed: sealed, now: 1}}
	}
	for _, batch := range [][]*pendingWrite[outboxAppend]{
		{pending("u", "a", "a1"), pending("u", "b", "b1"), pending("v", "a", "va")},
		{pending("u", "c", "c1"), pending("u", "c", "c2")}, // the same message twice
	} {
		st.appends.handle(batch)
		for _, p := range batch {
			if err := <-p.done; err != nil {
				t.Fatal(err)
			}
		}
	}
	for user, want := range map[string]string{"u": `a:{"message":"a1"} b:{"message":"b1"} c:{"message":"c2"}`, "v": `a:{"message":"va"}`} {
		page, err := st.UnackedOutbox(ctx, user, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range page.Entries {
			got = append(got, e.MessageID+":"+string(e.Payload))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("outbox of %s: %q, want %q", user, got, want)
		}
	}
}
