package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"slices"
	"time"

	"amsg/store/driver"
	"amsg/store/driver/batch"
)

// The group commit's bounds (batch.Options): the writes one transaction
// commits together; how long a busy writer waits for more before
// committing, and how long for the next one; how long an unhurried write
// (driver.Unhurried) on a writer that is not busy waits for company, or
// until a write that is not unhurried comes. A steady trickle of
// deliveries (1 000 a second, claimed every few milliseconds: the
// scheduler's TrickleWait) then commits each claim with the completions of
// the tasks before it, instead of every write alone.
//
// groupLinger is 30 ms (issue 24, branches trickle2 and linger30): in a
// trickle a group mostly ends when its first completion's linger does (a
// claim comes about every 40 ms), so the linger sets the commits a push:
// 5 ms made about 0.16 commits a push, 15 ms 0.067, 30 ms 0.046, and each
// commit rewrites the pages its pushes share (the tables' last pages, the
// due index, the header) and pays its fixed cost (BEGIN, the cache scan at
// the end of a commit, the WAL frame of each page). A completion is written
// after its push went out, with its slot handed off, so nothing on the
// delivery path waits for it; it holds a token of the scheduler's writing
// bound (as many as Concurrency, 64 by default) the linger longer, about
// 30 of them at 1 000 pushes a second. Once three quarters of the tokens
// are held the scheduler writes its completions hurried
// (Scheduler.completionContext), which ends the linger: a faster trickle
// commits more often rather than holding up deliveries. What a crash loses
// is what it lost before: completions not yet committed, whose tasks are
// sent again with the same ids once their leases run out.
const (
	maxGroupWrites = 128
	groupWait      = time.Millisecond
	groupGap       = 150 * time.Microsecond
	groupLinger    = 30 * time.Millisecond
	// checkpointInterval is how often the WAL is checkpointed (PASSIVE:
	// never waiting for the writer or the readers).
	checkpointInterval = time.Second
	// checkpointPasses is how many PASSIVE checkpoints, each flushed,
	// precede the committer's step in a round (checkpointRound).
	checkpointPasses = 2
	// maxWALBytes is the WAL size past which the writer waits for a
	// TRUNCATE checkpoint: readers that always hold a snapshot could
	// otherwise keep the WAL from ever starting over.
	maxWALBytes = 64 << 20
)

// writeOp is one write waiting for the committer: fn, or item, a write of
// kind (WriteCombined); neither: the checkpoint of the frames written while
// a PASSIVE checkpoint ran.
type writeOp struct {
	ctx  context.Context
	fn   func(*sql.Tx) error
	kind *driver.WriteKind
	item any
	// alone: item runs in a call of its own, since the call of its kind
	// it was in aborted the transaction.
	alone bool
	err   error // the outcome of its run in the transaction being built
	done  chan error
}

// combinedKind is the kind whose call runs op with the others of its kind
// in a group (batch.Combine), nil for a write that runs alone.
func (op *writeOp) combinedKind() *driver.WriteKind {
	if op.alone {
		return nil
	}
	return op.kind
}

// runOps runs ops, one write or several of one kind (combinedKind), in tx.
// A call of several gets no caller's context: the statements of a write run
// without their caller's cancellation anyway (StatementContext).
func runOps(tx *sql.Tx, ops []*writeOp) error {
	first := ops[0]
	switch {
	case first.kind == nil:
		return first.fn(tx)
	case len(ops) == 1:
		return first.kind.Combine(first.ctx, tx, []any{first.item})
	}
	items := make([]any, len(ops))
	for i, op := range ops {
		items[i] = op.item
	}
	return first.kind.Combine(context.Background(), tx, items)
}

// startWriter starts the committer (a batcher of writes, each batch one
// transaction) and the checkpointer beside it.
func (db *DB) startWriter() {
	db.writes = batch.New(batch.Options{MaxItems: maxGroupWrites, MaxWait: groupWait, Gap: groupGap, Linger: groupLinger},
		db.commitBatch)
	db.stopCheckpoints = make(chan struct{})
	db.checkpointsDone = make(chan struct{})
	go db.checkpointLoop()
}

// stopWriter stops the checkpointer, then the committer: writes after it
// fail with driver.ErrClosed.
func (db *DB) stopWriter() {
	if db.writes == nil {
		return
	}
	close(db.stopCheckpoints)
	<-db.checkpointsDone
	db.writes.Close()
}

// Write runs fn in a transaction on the writer connection, usually
// together with other writes waiting at the same time (commitGroup). It
// begins IMMEDIATE, so it holds the write lock from its first statement and
// never fails to upgrade a read lock; fn must read every *sql.Rows to the
// end before issuing another statement (the writer has one connection), and
// must not call Write.
func (db *DB) Write(ctx context.Context, fn func(*sql.Tx) error) error {
	return db.submit(&writeOp{ctx: ctx, fn: fn})
}

// WriteCombined runs item, a write of kind: the writes of one kind
// that a group commits go to one call of kind.Combine, in one savepoint. A
// call that fails is undone, and each of its items runs again in a call of
// its own, each in a savepoint.
func (db *DB) WriteCombined(ctx context.Context, kind *driver.WriteKind, item any) error {
	return db.submit(&writeOp{ctx: ctx, kind: kind, item: item})
}

// submit hands op to the committer and waits for its outcome.
func (db *DB) submit(op *writeOp) error {
	if err := op.ctx.Err(); err != nil {
		return err
	}
	op.done = make(chan error, 1)
	add := db.writes.Add
	if driver.IsUnhurried(op.ctx) {
		add = db.writes.Linger
	}
	if err := add(op); err != nil {
		return driver.ErrClosed
	}
	return <-op.done
}

// WriteLocked is Write: the one writer runs every write alone.
func (db *DB) WriteLocked(ctx context.Context, fn func(*sql.Tx) error) error {
	return db.Write(ctx, fn)
}

// checkpointLoop checkpoints the WAL on a timer (checkpointRound) until
// the writer stops.
func (db *DB) checkpointLoop() {
	defer close(db.checkpointsDone)
	ticker := time.NewTicker(checkpointInterval)
	defer ticker.Stop()
	for {
		select {
		case <-db.stopCheckpoints:
			return
		case <-ticker.C:
		}
		if db.checkpointRound() != nil {
			return
		}
	}
}

// checkpointRound checkpoints the WAL in two steps: PASSIVE checkpoints
// on the checkpointer's own connection copy the WAL into the database
// while writes go on; once they are done, the committer checkpoints the few
// frames written meanwhile between two transactions (a writeOp without
// fn), so the next write starts the WAL over instead of letting it grow
// (under steady writes a checkpoint alone never catches up). It fails only
// once the committer has stopped.
//
// The committer's step flushes the WAL before it copies and the database
// after, and a PASSIVE checkpoint that did not catch up flushes only the
// WAL: so the files are flushed here first, and the step's flushes carry
// only its own frames and pages instead of all the passes copied. The
// second pass copies what was written during the first and its flush, so
// the step is left the frames of a few milliseconds.
func (db *DB) checkpointRound() error {
	for range checkpointPasses {
		db.checkpoint()
		db.flushFiles()
	}
	return db.writes.Add(&writeOp{})
}

// commitBatch is the committer's handler: the checkpoints first, between
// two transactions, then the writes in one.
func (db *DB) commitBatch(ops []*writeOp) {
	db.turn.start()
	writes := ops[:0:0]
	for _, op := range ops {
		if op.fn != nil || op.kind != nil {
			writes = append(writes, op)
			continue
		}
		db.checkpoint()
		if info, err := os.Stat(db.walPath()); err == nil && info.Size() > db.walCeiling() {
			db.truncateWAL()
		}
	}
	if len(writes) == 0 {
		return
	}
	if db.disk.failing() != nil {
		db.truncateWAL() // a checkpoint may free what the writes need
	}
	db.commitGroup(writes)
}

// Commits is how many transactions the writer has committed.
func (db *DB) Commits() uint64 { return db.commits.Load() }

func (db *DB) walPath() string { return db.path + "-wal" }

// truncateWAL checkpoints the whole WAL and empties it, waiting (up to the
// busy timeout) for the readers.
func (db *DB) truncateWAL() {
	ctx, cancel := context.WithTimeout(context.Background(), BusyTimeout)
	defer cancel()
	if _, err := db.checkpointer.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		db.log.Warn("store: WAL truncation failed", "err", err)
	}
}

// checkpoint runs a PASSIVE checkpoint: it copies what it can of the WAL
// into the database without waiting for the writer or the readers.
func (db *DB) checkpoint() {
	ctx, cancel := context.WithTimeout(context.Background(), BusyTimeout)
	defer cancel()
	if _, err := db.checkpointer.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		db.log.Warn("store: WAL checkpoint failed", "err", err)
	}
}

// commitGroup commits a group of writes in one transaction. A group of
// several runs first without savepoints (tryBare); if a write of it fails,
// it runs again with each write inside a savepoint, so one that fails is
// rolled back alone; a failed commit fails them all. The transaction has no
// context of its own: a caller that gives up only loses its own write. A
// write whose failure ended the whole transaction (SQLite rolls a
// transaction back when a statement in it is interrupted, as a cancelled
// context does) fails alone, and the others run again in a new transaction.
func (db *DB) commitGroup(group []*writeOp) {
	live := make([]*writeOp, 0, len(group))
	for _, op := range group {
		if err := op.ctx.Err(); err != nil {
			op.done <- err
			continue
		}
		live = append(live, op)
	}
	if len(live) > 1 && db.tryBare(live) {
		return
	}
	for len(live) > 0 {
		live = db.tryGroup(live)
	}
}

// tryBare runs group, several writes, in one transaction without a
// savepoint for each, and commits it if every write succeeds. Writes
// rarely fail, and a savepoint costs its two statements and a sub-journal
// copy of each page it changes. On the first failure it rolls the whole
// transaction back and reports false, answering nobody: the group then
// runs again in savepoints (tryGroup), where each failure is its own.
func (db *DB) tryBare(group []*writeOp) (committed bool) {
	tx, err := db.writer.BeginTx(context.Background(), nil)
	if err != nil {
		return false // tryGroup begins again, and answers its failure
	}
	for _, op := range group {
		op.err = nil
	}
	for _, run := range batch.Combine(group, (*writeOp).combinedKind) {
		if runOps(tx, run) != nil {
			_ = tx.Rollback() // if the failure rolled it back already, this only ends the Tx
			return false
		}
	}
	db.commit(tx, group)
	return true
}

// errTxAborted marks a write whose failure rolled back the whole
// transaction of its group.
var errTxAborted = errors.New("store: the transaction was rolled back")

// tryGroup runs group in one transaction and answers every write, unless
// one write aborted the transaction: that one is answered, and the others
// are returned to run again. A group of several runs each write, or each
// kind's writes together (batch.Combine), in a savepoint: it is the
// fallback of tryBare.
func (db *DB) tryGroup(group []*writeOp) (again []*writeOp) {
	tx, err := db.writer.BeginTx(context.Background(), nil)
	if err != nil {
		for _, op := range group {
			op.done <- err
		}
		return nil
	}
	if len(group) == 1 {
		op := group[0]
		if op.err = runOps(tx, group); op.err != nil {
			if diskRefused(op.err) {
				db.disk.note(op.err)
			}
			op.done <- errors.Join(op.err, ignoreDone(tx.Rollback()))
			return nil
		}
	} else {
		for _, op := range group {
			op.err = nil
		}
		for _, run := range batch.Combine(group, (*writeOp).combinedKind) {
			if db.runInSavepoints(tx, run) {
				_ = tx.Rollback() // the connection rolled it back already; this ends the Tx
				return slices.DeleteFunc(slices.Clone(group), func(op *writeOp) bool {
					if errors.Is(op.err, errTxAborted) {
						op.done <- op.err
						return true
					}
					return false
				})
			}
		}
	}
	db.commit(tx, group)
	return nil
}

// commit commits tx, in which group ran, and answers each write: its own
// failure, else the commit's outcome.
func (db *DB) commit(tx *sql.Tx, group []*writeOp) {
	db.turn.yield()
	commitErr := tx.Commit()
	if commitErr == nil {
		db.commits.Add(1)
	}
	errs := make([]error, len(group))
	for i, op := range group {
		errs[i] = op.err
	}
	db.disk.note(commitOutcome(commitErr, errs...))
	for _, op := range group {
		if op.err == nil {
			op.err = commitErr
		}
		op.done <- op.err
	}
}

// runInSavepoints runs run, one write or several of one kind, in a
// savepoint, and each of the several again in a savepoint of its own if
// their call failed, setting each write's err. It reports whether a
// failure aborted the transaction: the write whose failure it was has it
// as its err; when it was the call of several, which write's is unknown,
// and they are marked to run alone when the group runs again.
func (db *DB) runInSavepoints(tx *sql.Tx, run []*writeOp) (aborted bool) {
	err := db.inSavepoint(tx, func(tx *sql.Tx) error { return runOps(tx, run) })
	switch {
	case len(run) == 1:
		run[0].err = err
		return errors.Is(err, errTxAborted)
	case errors.Is(err, errTxAborted):
		for _, op := range run {
			op.alone = true
		}
		return true
	case err == nil:
		return false
	}
	// Each write's own error reaches its caller; this says the call of
	// several failed, which a fault of the call itself would otherwise keep
	// silent (every write succeeding alone, one commit each).
	db.log.Warn("store: a call of several writes failed; running each alone", "writes", len(run), "err", err)
	for _, op := range run {
		op.err = db.inSavepoint(tx, func(tx *sql.Tx) error { return runOps(tx, []*writeOp{op}) })
		if errors.Is(op.err, errTxAborted) {
			return true
		}
	}
	return false
}

// commitOutcome is what the disk made of a commit: its error, else the
// first write the disk refused, else nil.
func commitOutcome(commitErr error, errs ...error) error {
	if commitErr != nil {
		return commitErr
	}
	for _, err := range errs {
		if diskRefused(err) {
			return err
		}
	}
	return nil
}

// inSavepoint runs fn, one write of a group or the call of several of one
// kind, undoing it alone if it fails. When the savepoint is gone after a
// failure, the failure ended the whole transaction, and the error says so
// (errTxAborted).
func (db *DB) inSavepoint(tx *sql.Tx, fn func(*sql.Tx) error) error {
	ctx := context.Background()
	if _, err := tx.StmtContext(ctx, db.savepoint).ExecContext(ctx); err != nil {
		return errors.Join(err, errTxAborted)
	}
	err := fn(tx)
	if err != nil {
		if _, rerr := tx.StmtContext(ctx, db.rollbackToSavepoint).ExecContext(ctx); rerr != nil {
			return errors.Join(err, rerr, errTxAborted)
		}
	}
	if _, rerr := tx.StmtContext(ctx, db.releaseSavepoint).ExecContext(ctx); rerr != nil {
		return errors.Join(err, rerr, errTxAborted)
	}
	return err
}

// prepareSavepoints prepares the group commit's savepoint statements once
// on the writer, since every write of a group runs two of them.
func (db *DB) prepareSavepoints(ctx context.Context) error {
	var err error
	for _, p := range []struct {
		stmt  **sql.Stmt
		query string
	}{{&db.savepoint, "SAVEPOINT write"}, {&db.rollbackToSavepoint, "ROLLBACK TO write"}, {&db.releaseSavepoint, "RELEASE write"}} {
		if *p.stmt, err = db.writer.PrepareContext(ctx, p.query); err != nil {
			return err
		}
	}
	return nil
}
