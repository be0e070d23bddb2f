package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"

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

// A group of writes commits together, but a write that fails is undone
// alone and a write whose caller gave up is not run.
func TestGroupCommitUndoesOnlyTheFailedWrite(t *testing.T) {
	st := openInternal(t)
	insert := func(id string, fail error) func(*sql.Tx) error {
		return func(tx *sql.Tx) error {
			if err := st.insertAttempts(t.Context(), tx, []push.Attempt{{MessageID: id, Outcome: push.OutcomeDelivered}}); err != nil {
				return err
			}
			return fail
		}
	}
	boom := errors.New("boom")
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	ops := []*writeOp{
		{ctx: t.Context(), fn: insert("a", nil)},
		{ctx: t.Context(), fn: insert("b", boom)},
		{ctx: gone, fn: insert("c", nil)},
		{ctx: t.Context(), fn: insert("d", nil)},
	}
	for _, op := range ops {
		op.done = make(chan error, 1)
	}
	st.commitGroup(ops) // the committer is idle: the writer is free
	var errs []error
	for _, op := range ops {
		errs = append(errs, <-op.done)
	}
	if errs[0] != nil || !errors.Is(errs[1], boom) || !errors.Is(errs[2], context.Canceled) || errs[3] != nil {
		t.Errorf("results %v, want nil, boom, canceled, nil", errs)
	}
	var kept []string
	for _, id := range []string{"a", "b", "c", "d"} {
		attempts, err := st.Attempts(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(attempts) > 0 {
			kept = append(kept, id)
		}
	}
	if !slices.Equal(kept, []string{"a", "d"}) {
		t.Errorf("committed %v, want a and d", kept)
	}
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

// A write whose failure ends the whole transaction (here by rolling it back
// itself, as an interrupted statement makes SQLite do) fails alone: the
// writes before and after it run again in a new transaction.
func TestGroupCommitSurvivesAWriteThatAbortsTheTransaction(t *testing.T) {
	st := openInternal(t)
	insert := func(id string) func(*sql.Tx) error {
		return func(tx *sql.Tx) error {
			return st.insertAttempts(t.Context(), tx, []push.Attempt{{MessageID: id, Outcome: push.OutcomeDelivered}})
		}
	}
	abort := func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(t.Context(), "ROLLBACK"); err != nil {
			return err
		}
		return errors.New("interrupted")
	}
	ops := []*writeOp{{fn: insert("a")}, {fn: abort}, {fn: insert("c")}}
	for _, op := range ops {
		op.ctx, op.done = t.Context(), make(chan error, 1)
	}
	st.commitGroup(ops)
	if err := <-ops[0].done; err != nil {
		t.Errorf("write before the abort: %v", err)
	}
	if err := <-ops[1].done; !errors.Is(err, errTxAborted) {
		t.Errorf("aborting write: %v, want errTxAborted", err)
	}
	if err := <-ops[2].done; err != nil {
		t.Errorf("write after the abort: %v", err)
	}
	for _, id := range []string{"a", "c"} {
		if attempts, err := st.Attempts(t.Context(), id); err != nil || len(attempts) != 1 {
			t.Errorf("attempts of %s: %v, %v; want it committed once", id, attempts, err)
		}
	}
}
