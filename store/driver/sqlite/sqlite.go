// Package sqlite is the store's SQLite driver: one database file (pure Go,
// modernc.org/sqlite) in WAL mode with one writer connection, so writes
// queue in the process instead of failing with SQLITE_BUSY, beside a small
// pool of read-only connections.
//
// One goroutine owns the writer connection: it commits the writes waiting
// at the time together in one transaction (group commit; writer.go: if a
// write fails, the group runs again with a savepoint per write, so one
// failing write does not undo the others), and the
// WAL is checkpointed by a timer on a connection of its own rather than by
// the writer's commits.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"amsg/store/driver"
	"amsg/store/driver/batch"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

const (
	// BusyTimeout bounds how long a connection waits for a lock another
	// process holds (a backup tool, the sqlite3 shell).
	BusyTimeout = 5 * time.Second
	// readConns bounds the read pool: each connection has its own page cache.
	readConns = 4
)

// DB is an open SQLite database.
type DB struct {
	path         string  // absolute
	writer       *sql.DB // one connection: SQLite has one writer anyway
	reader       *sql.DB // query_only connections
	checkpointer *sql.DB // one connection that checkpoints the WAL
	log          *slog.Logger
	disk         storageHealth // whether the disk refuses writes

	// file is the database file, open for the DB's life so the
	// checkpointer can flush it (flushFiles; nil where it cannot); closed
	// after the pools, since closing any descriptor of the file drops the
	// POSIX locks SQLite's connections hold on it.
	file *os.File

	// writes is the committer (writer.go); stopCheckpoints ends the
	// checkpointer beside it, and checkpointsDone is closed once it has.
	writes          *batch.Batcher[*writeOp]
	stopCheckpoints chan struct{}
	checkpointsDone chan struct{}
	commits         atomic.Uint64 // transactions the writer committed
	turn            *turns        // the writer's turn on the CPU (turns.go)
	closeOnce       sync.Once
	closeErr        error
	// The group commit's savepoint statements, prepared on the writer.
	savepoint, rollbackToSavepoint, releaseSavepoint *sql.Stmt
}

// Open opens (creating if needed, readable by its owner only) the database
// file at path, whose directory must exist, and starts its writer. log gets
// the checkpoints' failures.
func Open(ctx context.Context, path string, log *slog.Logger) (*DB, error) {
	db := &DB{log: log, turn: newTurns()}
	if err := db.open(ctx, path); err != nil {
		return nil, errors.Join(err, db.closePools())
	}
	db.startWriter()
	return db, nil
}

func (db *DB) open(ctx context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	db.path = abs
	if err := prepareFile(abs); err != nil {
		return err
	}
	// The writer never checkpoints on commit: the store checkpoints on the
	// checkpointer's connection, off the writer's path. Its page cache is
	// writerCacheKiB: the default 2 MiB does not hold the leaves a
	// delivery writes into (per-user indexes keyed by random message ids),
	// so every write read pages back from the WAL or the file.
	if db.writer, err = sql.Open("sqlite", dsn(abs, fmt.Sprintf("_txlock=immediate&_pragma=wal_autocheckpoint(0)&_pragma=cache_size(-%d)", writerCacheKiB))); err != nil {
		return err
	}
	db.writer.SetMaxOpenConns(1)
	// The first connection applies the pragmas: a file that is not a
	// database, or is locked beyond BusyTimeout, fails here.
	var mode string
	if err := db.writer.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode is %q, not wal (is the file on a network file system?)", mode)
	}
	if db.file, err = openForFlush(abs); err != nil {
		return err
	}
	if db.reader, err = sql.Open("sqlite", dsn(abs, "_pragma=query_only(1)")); err != nil {
		return err
	}
	db.reader.SetMaxOpenConns(readConns)
	db.reader.SetMaxIdleConns(readConns)
	if db.checkpointer, err = sql.Open("sqlite", dsn(abs, "")); err != nil {
		return err
	}
	db.checkpointer.SetMaxOpenConns(1)
	return db.prepareSavepoints(ctx)
}

// writerCacheKiB is the writer connection's page cache, at most: in a
// trickle of 1 000 pushes a second amsg made 8.1 read system calls a push
// with SQLite's default 2 MiB and 4.0 with 16 MiB (docs/performance.md);
// the readers keep the default, since SQLite empties a reader's cache
// whenever another connection has written.
const writerCacheKiB = 16 << 10

// prepareFile checks the directory and creates the database file readable by
// its owner only: it holds the master key and the VAPID private key. SQLite
// gives the -wal and -shm files the same permissions.
func prepareFile(path string) error {
	dir := filepath.Dir(path)
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("data directory %s is not a directory", dir)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// dsn builds a file: URI carrying the per-connection pragmas, so every
// pooled connection gets them (a PRAGMA run with Exec reaches only one).
func dsn(path, extra string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	// A multi-row statement in a transaction opens a statement journal
	// (about 4 pages a delivered push), as does the savepoint of each write
	// of a group that runs again after a failure; their sub-journal would
	// otherwise spill to a temporary file once it holds 64 KiB: a pwrite
	// per changed page.
	q.Add("_pragma", "temp_store(MEMORY)")
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode() + "&" + extra}
	return u.String()
}

// Probe runs fn on a connection of its own to the file at its path,
// without creating it: the pooled connections keep a deleted or replaced
// file open and would not notice. While the disk refuses writes, the WAL
// must first checkpoint away, so fn's write needs new space.
func (db *DB) Probe(ctx context.Context, fn func(*sql.Tx) error) error {
	if err := db.reader.PingContext(ctx); err != nil { // closed
		return err
	}
	if err := db.recoverStorage(ctx); err != nil {
		return err
	}
	if err := db.probe(ctx, fn); err != nil {
		return err
	}
	db.disk.note(nil) // the disk took a write from an empty WAL
	return nil
}

func (db *DB) probe(ctx context.Context, fn func(*sql.Tx) error) error {
	if _, err := os.Stat(db.path); err != nil {
		return err
	}
	probe, err := sql.Open("sqlite", dsn(db.path, "mode=rw&_txlock=immediate"))
	if err != nil {
		return err
	}
	defer probe.Close()
	tx, err := probe.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, ignoreDone(tx.Rollback()))
	}
	return tx.Commit()
}

// Writer is the one write connection.
func (db *DB) Writer() *sql.DB { return db.writer }

// Reader is the read-only pool.
func (db *DB) Reader() *sql.DB { return db.reader }

// Dialect is SQLite's SQL.
func (db *DB) Dialect() *driver.Dialect { return &dialect }

// Exclusive runs fn: one process serves a SQLite file (the data-directory
// lock), and its writes already queue on one connection.
func (db *DB) Exclusive(_ context.Context, _ string, fn func() error) error { return fn() }

// Leader leads always: one process serves a SQLite file.
func (db *DB) Leader(string, time.Duration) driver.Leader { return soleProcess{} }

type soleProcess struct{}

func (soleProcess) Check(context.Context) (bool, error) { return true, nil }
func (soleProcess) Release() error                      { return nil }

// ListenTasks waits for ctx: the one process wakes and cancels its
// scheduler's deliveries itself.
func (db *DB) ListenTasks(ctx context.Context, _ time.Duration, _ func(), _ func(int64)) error {
	<-ctx.Done()
	return nil
}

// PollOnly is false: the one process needs no wake-ups from others.
func (db *DB) PollOnly() bool { return false }

// StatementContext drops ctx's cancellation: the SQLite library watches a
// cancellable context with a goroutine and a progress handler per
// statement, which costs more than most statements of a delivery, and an
// interrupted statement would roll back the whole group commit its write is
// in. The writer still skips a write whose caller gave up before it ran.
// Before the statement, the writer yields the CPU if its turn is over
// (writerTurn).
func (db *DB) StatementContext(ctx context.Context) context.Context {
	db.turn.yield()
	return context.WithoutCancel(ctx)
}

// closing runs on the writer at Close, once the committer has stopped.
var closing = []string{`PRAGMA optimize`, `PRAGMA wal_checkpoint(TRUNCATE)`}

// Close stops the writer (writes after it fail with driver.ErrClosed), runs
// PRAGMA optimize and a TRUNCATE checkpoint of the WAL when it committed
// anything, and closes the pools. Later calls return the first call's result.
func (db *DB) Close() error {
	db.closeOnce.Do(func() { db.closeErr = db.close() })
	return db.closeErr
}

func (db *DB) close() error {
	db.stopWriter()
	if db.commits.Load() == 0 {
		// Nothing of this process's to optimize or checkpoint away (a
		// backup, a restore's check), and a checkpoint would wait for the
		// readers of the process that writes the file.
		return db.closePools()
	}
	ctx, cancel := context.WithTimeout(context.Background(), BusyTimeout)
	defer cancel()
	var errs []error
	for _, statement := range closing {
		if _, err := db.writer.ExecContext(ctx, statement); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", statement, err))
		}
	}
	return errors.Join(append(errs, db.closePools())...)
}

// closePools closes the pools, then the files kept for flushing.
func (db *DB) closePools() error {
	var errs []error
	for _, pool := range []*sql.DB{db.reader, db.checkpointer, db.writer} {
		if pool != nil {
			errs = append(errs, pool.Close())
		}
	}
	if db.file != nil {
		errs = append(errs, db.file.Close())
	}
	return errors.Join(errs...)
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}
