package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	"amsg/store/driver"
)

// insertKind is a kind of write whose items are ids inserted into t in one
// multi-row statement a call; it records each call's items, and an item
// "fail" fails the call (after its rows went in), "abort" rolls the whole
// transaction back as an interrupted statement makes SQLite do.
type insertKind struct {
	calls [][]string
	kind  driver.WriteKind
}

var errFailItem = errors.New("an item that fails")

func newInsertKind() *insertKind {
	k := &insertKind{}
	k.kind.Combine = func(ctx context.Context, tx *sql.Tx, items []any) error {
		ids := make([]string, len(items))
		args := make([]any, len(items))
		for i, item := range items {
			ids[i], args[i] = item.(string), item
		}
		k.calls = append(k.calls, ids)
		if _, err := tx.ExecContext(ctx, `INSERT INTO t (id) VALUES `+strings.Repeat("(?), ", len(ids)-1)+"(?)", args...); err != nil {
			return err
		}
		switch {
		case slices.Contains(ids, "abort"):
			if _, err := tx.ExecContext(ctx, "ROLLBACK"); err != nil {
				return err
			}
			return errors.New("interrupted")
		case slices.Contains(ids, "fail"):
			return errFailItem
		}
		return nil
	}
	return k
}

// combined adds to ops a write of k's kind per id.
func (k *insertKind) combined(ctx context.Context, ops []*writeOp, ids ...string) []*writeOp {
	for _, id := range ids {
		ops = append(ops, &writeOp{ctx: ctx, kind: &k.kind, item: id, done: make(chan error, 1)})
	}
	return ops
}

// results reads each op's answer.
func results(ops []*writeOp) []error {
	errs := make([]error, len(ops))
	for i, op := range ops {
		errs[i] = <-op.done
	}
	return errs
}

// The writes of one kind in a group run in one call, in the place of the
// first of them; the other writes each alone, in their order.
func TestGroupCommitRunsTheWritesOfAKindInOneCall(t *testing.T) {
	db := openTable(t)
	k := newInsertKind()
	ops := newOps(t.Context(), insert("a", nil))
	ops = k.combined(t.Context(), ops, "b", "c")
	ops = append(ops, newOps(t.Context(), insert("d", nil))...)
	ops = k.combined(t.Context(), ops, "e")
	db.commitGroup(ops)
	for i, err := range results(ops) {
		if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	if want := [][]string{{"b", "c", "e"}}; !reflect.DeepEqual(k.calls, want) {
		t.Errorf("calls %q, want %q", k.calls, want)
	}
	if kept := stored(t, db); !slices.Equal(kept, []string{"a", "b", "c", "d", "e"}) {
		t.Errorf("committed %v", kept)
	}
}

// A call that fails is undone and each of its items runs again alone, so
// only the item that fails fails, and the others are written once. A call
// that aborts the transaction does not say which item's failure it was:
// the group runs again with those items each alone. (The group's first
// run, without savepoints, made the first call; its failure rolled that
// run back whole.)
func TestAFailedCallRunsEachItemAlone(t *testing.T) {
	for _, c := range []struct {
		bad   string
		want  error
		calls [][]string
	}{
		{"fail", errFailItem, [][]string{{"b", "fail", "c"}, {"b", "fail", "c"}, {"b"}, {"fail"}, {"c"}}},
		{"abort", errTxAborted, [][]string{{"b", "abort", "c"}, {"b", "abort", "c"}, {"b"}, {"abort"}, {"b"}, {"c"}}},
	} {
		t.Run(c.bad, func(t *testing.T) {
			db := openTable(t)
			var logs bytes.Buffer
			db.log = slog.New(slog.NewTextHandler(&logs, nil))
			k := newInsertKind()
			ops := k.combined(t.Context(), newOps(t.Context(), insert("a", nil)), "b", c.bad, "c")
			db.commitGroup(ops)
			errs := results(ops)
			if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], c.want) || errs[3] != nil {
				t.Errorf("results %v, want nil, nil, %v, nil", errs, c.want)
			}
			if !reflect.DeepEqual(k.calls, c.calls) {
				t.Errorf("calls %q, want %q", k.calls, c.calls)
			}
			if kept := stored(t, db); !slices.Equal(kept, []string{"a", "b", "c"}) {
				t.Errorf("committed %v, want a, b and c once each", kept)
			}
			// A call that failed without aborting the transaction is told.
			if told := strings.Contains(logs.String(), "a call of several writes failed"); told != (c.bad == "fail") {
				t.Errorf("warned %v for a %s, logs:\n%s", told, c.bad, logs.String())
			}
		})
	}
}

// WriteCombined from many goroutines commits every item, whatever the
// groups were.
func TestWriteCombinedCommitsEveryItem(t *testing.T) {
	db := openTable(t)
	k := newInsertKind()
	errs := make(chan error, 20)
	for i := range 20 {
		go func() { errs <- db.WriteCombined(t.Context(), &k.kind, string(rune('a'+i))) }()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := len(stored(t, db)); n != 20 {
		t.Errorf("%d rows, want 20", n)
	}
}
