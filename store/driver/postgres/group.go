package postgres

import (
	"context"
	"database/sql"
	"time"

	"amsg/store/driver"
	"amsg/store/driver/batch"
)

// The group commit of WriteLocked (batch.Options): the writes one READ
// COMMITTED transaction commits together; how long a busy committer waits
// for more, in all and for the next one; and how many groups are committed
// at once. One: the writes that arrive while a group commits make the
// next group, so a busy instance commits fewer, larger groups, and its
// transactions do not contend with each other for the same index pages
// (issue 24: with two at once, 0.14 commits a push against 0.10 with one,
// and PostgreSQL's CPU a push about a tenth higher).
const (
	maxGroupWrites = 128
	groupWait      = 5 * time.Millisecond
	groupGap       = time.Millisecond
	groupHandlers  = 1
	// groupTimeout bounds one group's transaction: it runs for every
	// caller in it, so no one caller's context may end it.
	groupTimeout = 30 * time.Second
)

// lockedWrite is one WriteLocked waiting for its group.
type lockedWrite struct {
	ctx  context.Context
	fn   func(*sql.Tx) error
	done chan error
}

func (db *DB) startGroupCommit() {
	db.locked = batch.New(batch.Options{MaxItems: maxGroupWrites, MaxWait: groupWait, Gap: groupGap, MaxHandlers: groupHandlers},
		db.commitLocked)
}

// WriteLocked runs fn at READ COMMITTED, usually in one transaction with
// the other WriteLocked calls waiting at the time (group commit: one commit
// for many pushes' bookkeeping). fn's statements take the row locks they
// need, and SKIP LOCKED keeps concurrent claimers apart where SERIALIZABLE
// would fail one of them. fn may run more than once: a group that fails is
// run again write by write, and one that loses a deadlock from the start.
func (db *DB) WriteLocked(ctx context.Context, fn func(*sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := &lockedWrite{ctx: ctx, fn: fn, done: make(chan error, 1)}
	if err := db.locked.Add(w); err != nil {
		return driver.ErrClosed
	}
	return <-w.done
}

// commitLocked commits a group of WriteLocked calls in one transaction. If
// any of them fails, or the commit does, the transaction is rolled back and
// each write runs again alone, so one write's failure is its own.
func (db *DB) commitLocked(group []*lockedWrite) {
	live := group[:0:0]
	for _, w := range group {
		if err := w.ctx.Err(); err != nil {
			w.done <- err
			continue
		}
		live = append(live, w)
	}
	if len(live) == 0 {
		return
	}
	if len(live) > 1 {
		ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
		err := retry(ctx, func() error {
			return db.inTx(ctx, sql.LevelReadCommitted, func(tx *sql.Tx) error {
				for _, w := range live {
					if err := w.fn(tx); err != nil {
						return err
					}
				}
				return nil
			})
		})
		cancel()
		if err == nil {
			for _, w := range live {
				w.done <- nil
			}
			return
		}
	}
	for _, w := range live {
		w.done <- retry(w.ctx, func() error { return db.inTx(w.ctx, sql.LevelReadCommitted, w.fn) })
	}
}
