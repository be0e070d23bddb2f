package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"amsg/store/driver"
)

// openTable opens a database with one table, t, of text ids.
func openTable(t *testing.T) *DB {
	t.Helper()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "amsg.db"), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Writer().ExecContext(t.Context(), `CREATE TABLE t (id TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func insert(id string, fail error) func(*sql.Tx) error {
	return func(tx *sql.Tx) error {
		if _, err := tx.Exec(`INSERT INTO t (id) VALUES (?)`, id); err != nil {
			return err
		}
		return fail
	}
}

// stored returns the ids in t, in order.
func stored(t *testing.T, db *DB) []string {
	t.Helper()
	rows, err := db.Reader().QueryContext(t.Context(), `SELECT id FROM t ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

func newOps(ctx context.Context, fns ...func(*sql.Tx) error) []*writeOp {
	ops := make([]*writeOp, len(fns))
	for i, fn := range fns {
		ops[i] = &writeOp{ctx: ctx, fn: fn, done: make(chan error, 1)}
	}
	return ops
}

// A group of writes commits together, but a write that fails is undone
// alone and a write whose caller gave up is not run.
func TestGroupCommitUndoesOnlyTheFailedWrite(t *testing.T) {
	db := openTable(t)
	boom := errors.New("boom")
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	ops := newOps(t.Context(), insert("a", nil), insert("b", boom), insert("c", nil), insert("d", nil))
	ops[2].ctx = gone
	db.commitGroup(ops) // the committer is idle: the writer is free
	var errs []error
	for _, op := range ops {
		errs = append(errs, <-op.done)
	}
	if errs[0] != nil || !errors.Is(errs[1], boom) || !errors.Is(errs[2], context.Canceled) || errs[3] != nil {
		t.Errorf("results %v, want nil, boom, canceled, nil", errs)
	}
	if kept := stored(t, db); !slices.Equal(kept, []string{"a", "d"}) {
		t.Errorf("committed %v, want a and d", kept)
	}
}

// A group whose writes all succeed runs without a savepoint for each (a
// savepoint copies every page it changes to its sub-journal); a group in
// which one write fails runs again with one, so the others still commit.
func TestAGroupRunsInSavepointsOnlyAfterAFailure(t *testing.T) {
	for _, c := range []struct {
		name       string
		fail       error
		savepoints []bool // whether each run of the probe was in a savepoint
		kept       []string
	}{
		{"none fails", nil, []bool{false}, []string{"a", "b", "c"}},
		{"one fails", errors.New("boom"), []bool{false, true}, []string{"a", "c"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := openTable(t)
			var savepoints []bool
			// Releasing the group commit's savepoint fails when there is
			// none; where there is one, the probe takes it back at once.
			probe := func(tx *sql.Tx) error {
				if _, err := tx.Exec(`RELEASE write`); err != nil {
					savepoints = append(savepoints, false)
					return nil
				}
				savepoints = append(savepoints, true)
				_, err := tx.Exec(`SAVEPOINT write`)
				return err
			}
			ops := newOps(t.Context(), insert("a", nil), probe, insert("b", c.fail), insert("c", nil))
			db.commitGroup(ops)
			errs := results(ops)
			if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], c.fail) || errs[3] != nil {
				t.Errorf("results %v, want nil, nil, %v, nil", errs, c.fail)
			}
			if !slices.Equal(savepoints, c.savepoints) {
				t.Errorf("the probe ran in a savepoint: %v, want %v", savepoints, c.savepoints)
			}
			if kept := stored(t, db); !slices.Equal(kept, c.kept) {
				t.Errorf("committed %v, want %v", kept, c.kept)
			}
		})
	}
}

// A write whose failure ends the whole transaction (here by rolling it back
// itself, as an interrupted statement makes SQLite do) fails alone: the
// writes before and after it run again in a new transaction.
func TestGroupCommitSurvivesAWriteThatAbortsTheTransaction(t *testing.T) {
	db := openTable(t)
	abort := func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(t.Context(), "ROLLBACK"); err != nil {
			return err
		}
		return errors.New("interrupted")
	}
	ops := newOps(t.Context(), insert("a", nil), abort, insert("c", nil))
	db.commitGroup(ops)
	if err := <-ops[0].done; err != nil {
		t.Errorf("write before the abort: %v", err)
	}
	if err := <-ops[1].done; !errors.Is(err, errTxAborted) {
		t.Errorf("aborting write: %v, want errTxAborted", err)
	}
	if err := <-ops[2].done; err != nil {
		t.Errorf("write after the abort: %v", err)
	}
	if kept := stored(t, db); !slices.Equal(kept, []string{"a", "c"}) {
		t.Errorf("committed %v, want a and c once each", kept)
	}
}

// Writes handed to Write from many goroutines all commit, and a write after
// Close fails with driver.ErrClosed.
func TestWriteCommitsAndRefusesAfterClose(t *testing.T) {
	db := openTable(t)
	errs := make(chan error, 20)
	for i := range 20 {
		go func() { errs <- db.Write(t.Context(), insert(string(rune('a'+i)), nil)) }()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := len(stored(t, db)); n != 20 {
		t.Errorf("%d rows, want 20", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Write(t.Context(), insert("late", nil)); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("write after Close: %v, want driver.ErrClosed", err)
	}
}

// Under writes that never stop, the checkpointer's PASSIVE checkpoint
// never catches up, so the WAL would grow without end; after a checkpoint
// round the writer lets it start over: the next write begins it again from
// its first frame.
func TestWALStartsOverUnderSteadyWrites(t *testing.T) {
	db := openTable(t)
	ctx := t.Context()
	stop, steady := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				steady <- nil
				return
			default:
			}
			if err := db.Write(ctx, insert("steady", nil)); err != nil {
				steady <- err
				return
			}
		}
	}()
	const grown = 2048 // frames: 8 MiB of 4 KiB pages
	blob := strings.Repeat("x", 256<<10)
	for walFrames(t, db) < grown {
		if err := db.Write(ctx, insert(blob, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.checkpointRound(); err != nil {
		t.Fatal(err)
	}
	if err := db.Write(ctx, insert("after", nil)); err != nil {
		t.Fatal(err)
	}
	frames := walFrames(t, db)
	close(stop)
	if err := <-steady; err != nil {
		t.Fatal(err)
	}
	if frames >= grown {
		t.Errorf("the WAL holds %d frames after a checkpoint round under steady writes: it did not start over", frames)
	}
	info, err := os.Stat(db.walPath())
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > maxWALBytes {
		t.Errorf("the WAL file grew to %d bytes, past %d", info.Size(), maxWALBytes)
	}
}

// walFrames checkpoints the WAL (PASSIVE) and returns the frames it holds
// since it last started over.
func walFrames(t *testing.T, db *DB) int64 {
	t.Helper()
	var busy, frames, copied int64
	if err := db.checkpointer.QueryRowContext(t.Context(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
		t.Fatal(err)
	}
	return frames
}
