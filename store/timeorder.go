package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Three append-only tables are read by time: the delivery log and the
// message events by at, the outbox by created_at (the prunes, the
// operator's charts, the unknown-subscription check). PostgreSQL reads them
// through block-range indexes (its timeRangesSchema). SQLite has none, and
// a B-tree by time cost every push five entries (issue 24), so it has no
// index on those columns (appendOrderedSchema): rows are appended in nearly
// the order of their time, so the rowids of the rows at or past an instant
// are found by a binary search over the rowid (searchRows), and the read
// scans that range by rowid with the time still filtered.
//
// How far out of order: a row's time is stamped before its write commits.
// The store's own stamps (an outbox row's created_at; queued, deferred,
// acknowledged and device events; any event without a time) are taken when
// the write is prepared, and a write runs within its caller's bound (the
// courier's and scheduler's bookkeeping writes: 10 s a try, a write whose
// caller gave up skipped) or not at all. An attempt and its sent,
// accepted or failed events carry the time of its HTTP request, and are
// written once the push's delivery has ended: with the sender's defaults
// (30 s a request, 4 attempts, 30 s of retry waits) 2.5 minutes a payload,
// each chunk of a multipart push one more payload, then the courier's write
// retries (30 s). lateRowSlack bounds that for the readers with room to
// spare; pruneSlack is a prune's, which needs no bound (below).

// appendOrdered is a table whose rows are appended in about the order of
// one of its time columns.
type appendOrdered struct{ table, column string }

var (
	attemptsByTime    = appendOrdered{"delivery_log", "at"}
	eventsByTime      = appendOrdered{"message_events", "at"}
	outboxByCreation  = appendOrdered{"message_outbox", "created_at"}
	appendOrderedSets = []appendOrdered{attemptsByTime, eventsByTime, outboxByCreation}
)

const (
	// lateRowSlack is how much older than a row appended before it a row
	// may be, for a read of the rows at or past an instant to find them
	// all: the rowids it scans start at the rows an hour before it.
	lateRowSlack = time.Hour
	// pruneSlack is how much later than its time a prune looks for rows
	// to delete. A prune filters by time, so it never deletes a row it
	// must keep; a row later than this past the range is deleted by a
	// later prune, once the rows around it have aged too.
	pruneSlack = time.Minute
	// probeRows is how many rows, from a rowid on, one probe of the
	// search reads: it takes the latest of their times when it looks for
	// the start of a read and the earliest when it looks for the end of a
	// prune, so that one row far out of order (an outbox row whose retry
	// replaced its created_at, an attempt of a push that retried for
	// longer than lateRowSlack) cannot move the range past rows it must
	// cover.
	probeRows = 8
)

// rowRange narrows a read by time of an appendOrdered table to the rowids
// its rows lie in, on SQLite; on PostgreSQL it narrows nothing.
type rowRange struct {
	op    string // ">=" or "<"; "" for no bound
	rowid int64
}

// where returns the rowid condition of the rows of alias (the table's name
// or its alias in the query) followed by AND, or "" for no bound; args
// its argument.
func (r rowRange) where(alias string) string {
	if r.op == "" {
		return ""
	}
	return alias + ".id " + r.op + " ? AND "
}

func (r rowRange) args() []any {
	if r.op == "" {
		return nil
	}
	return []any{r.rowid}
}

// rowsSince returns the range of t's rows whose time is since or later,
// read in q (in the transaction of the read it narrows).
func (s *Store) rowsSince(ctx context.Context, q searcher, t appendOrdered, since int64) (rowRange, error) {
	if !s.rowsByRowid() {
		return rowRange{}, nil
	}
	from, err := searchRows(ctx, q, t, since-lateRowSlack.Milliseconds(), "max")
	return rowRange{">=", from}, err
}

// rowsBefore returns the range a prune of t's rows older than cutoff reads.
func (s *Store) rowsBefore(ctx context.Context, t appendOrdered, cutoff int64) (rowRange, error) {
	if !s.rowsByRowid() {
		return rowRange{}, nil
	}
	to, err := searchRows(ctx, s.reader, t, cutoff+pruneSlack.Milliseconds(), "min")
	return rowRange{"<", to}, err
}

// rowsByRowid reports whether the appendOrdered tables are read by rowid
// range: on SQLite, which has no index on their times.
func (s *Store) rowsByRowid() bool { return s.dialect.Name == "sqlite" }

// readSince runs read with the range of t's rows since since, the search
// and the read in one read transaction (on SQLite), so that a row deleted
// between the probes cannot let a row appended later take a rowid before
// the range.
func (s *Store) readSince(ctx context.Context, t appendOrdered, since int64, read func(searcher, rowRange) error) error {
	if !s.rowsByRowid() {
		return read(s.reader, rowRange{})
	}
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("store: read %s by time: %w", t.table, err)
	}
	defer func() { _ = tx.Rollback() }()
	r, err := s.rowsSince(ctx, tx, t, since)
	if err != nil {
		return fmt.Errorf("store: read %s by time: %w", t.table, err)
	}
	return read(tx, r)
}

// searcher is what a transaction and a pool have in common for the search.
type searcher interface {
	querier
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// searchRows returns a rowid of t that splits its rows at the instant x: a
// binary search over the rowids, each probe reading probeRows rows from a
// rowid and comparing extreme ("max" or "min") of their times with x. The
// rows before the result belong to a probe whose extreme was before x (or
// there are none), those from the result on to one whose extreme was at or
// past x (or there are none). If a row is at most d older than every row
// appended before it, then with "max" every row before the result is older
// than x+d, and with "min" every row from the result on is at x-d or later.
// An empty table gives 0. Each probe is a seek by rowid: O(log n) probes of
// O(log n) pages.
func searchRows(ctx context.Context, q searcher, t appendOrdered, x int64, extreme string) (int64, error) {
	var first, last sql.NullInt64
	if err := q.QueryRowContext(ctx, boundsSQL(t)).Scan(&first, &last); err != nil {
		return 0, err
	}
	if !first.Valid {
		return 0, nil
	}
	probe, err := q.PrepareContext(ctx, probeSQL(t, extreme))
	if err != nil {
		return 0, err
	}
	defer probe.Close()
	low, high := first.Int64, last.Int64+1
	for low < high {
		mid := low + (high-low)/2
		var id, at sql.NullInt64
		err := probe.QueryRowContext(ctx, mid).Scan(&id, &at)
		switch {
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return 0, err
		case !id.Valid || at.Int64 >= x: // no rows from mid (deleted since), or the extreme at or past x
			high = mid
		default:
			low = id.Int64 + 1
		}
	}
	return low, nil
}

// probeSQL reads the first rowid from its argument on and extreme of the
// times of the probeRows rows from there.
func probeSQL(t appendOrdered, extreme string) string {
	return `SELECT min(id), ` + extreme + `(` + t.column + `) FROM (SELECT id, ` + t.column + ` FROM ` + t.table +
		` WHERE id >= ? ORDER BY id LIMIT ` + strconv.Itoa(probeRows) + `)`
}

// boundsSQL reads t's first and last rowids, each a seek (one query's
// min(id) and max(id) together would scan the table).
func boundsSQL(t appendOrdered) string {
	return `SELECT (SELECT min(id) FROM ` + t.table + `), (SELECT max(id) FROM ` + t.table + `)`
}
