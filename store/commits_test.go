package store

import (
	"database/sql"
	"testing"

	"amsg/push"
)

// A group of writes is one commit; a write alone is one too.
func TestCommitsCountsTransactionsNotWrites(t *testing.T) {
	st := openInternal(t)
	insert := func(id string) *writeOp {
		return &writeOp{ctx: t.Context(), done: make(chan error, 1), fn: func(tx *sql.Tx) error {
			return st.insertAttempts(t.Context(), tx, []push.Attempt{{MessageID: id, Outcome: push.OutcomeDelivered}})
		}}
	}
	before := st.Commits()
	group := []*writeOp{insert("a"), insert("b"), insert("c")}
	st.commitGroup(group) // the committer is idle: the writer is free
	for _, op := range group {
		if err := <-op.done; err != nil {
			t.Fatal(err)
		}
	}
	if got := st.Commits() - before; got != 1 {
		t.Errorf("a group of 3 writes made %d commits, want 1", got)
	}
	if err := st.write(t.Context(), insert("d").fn); err != nil {
		t.Fatal(err)
	}
	if got := st.Commits() - before; got != 2 {
		t.Errorf("after one more write: %d commits, want 2", got)
	}
}
