// Package sqlite is the store's SQLite driver: one database file (pure Go,
// modernc.org/sqlite) in WAL mode with one writer connection, so writes
// queue in the process instead of failing with SQLITE_BUSY, beside a small
// pool of read-only connections.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"amsg/store/driver"

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
}

// Open opens (creating if needed, readable by its owner only) the database
// file at path, whose directory must exist.
func Open(ctx context.Context, path string) (*DB, error) {
	db := &DB{}
	if err := db.open(ctx, path); err != nil {
		return nil, errors.Join(err, db.Close())
	}
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
	// checkpointer's connection, off the writer's path.
	if db.writer, err = sql.Open("sqlite", dsn(abs, "_txlock=immediate&_pragma=wal_autocheckpoint(0)")); err != nil {
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
	if db.reader, err = sql.Open("sqlite", dsn(abs, "_pragma=query_only(1)")); err != nil {
		return err
	}
	db.reader.SetMaxOpenConns(readConns)
	db.reader.SetMaxIdleConns(readConns)
	if db.checkpointer, err = sql.Open("sqlite", dsn(abs, "")); err != nil {
		return err
	}
	db.checkpointer.SetMaxOpenConns(1)
	return nil
}

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
	// The writer's group commit gives every write a savepoint, whose
	// sub-journal would otherwise spill to a temporary file once a group
	// has changed 64 KiB: a pwrite per changed page.
	q.Add("_pragma", "temp_store(MEMORY)")
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode() + "&" + extra}
	return u.String()
}

// LatestSchemaVersion is the version dialect.Migrations bring a database to.
func LatestSchemaVersion() int { return len(dialect.Migrations) }

// OpenExisting opens the database file at path, which must exist, on one
// connection of its own with the driver's pragmas: for checking a file
// before it becomes a store.
func OpenExisting(path string) (*sql.DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn(path, "mode=rw"))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// VacuumInto writes a compact, consistent copy of the database file at path
// into out, an existing empty file, in one read transaction: a server using
// the file keeps reading and writing meanwhile.
func VacuumInto(ctx context.Context, path, out string) error {
	db, err := sql.Open("sqlite", dsn(path, ""))
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `VACUUM INTO ?`, out)
	return err
}

// Probe runs fn on a connection of its own to the file at its path,
// without creating it: the pooled connections keep a deleted or replaced
// file open and would not notice.
func (db *DB) Probe(ctx context.Context, fn func(*sql.Tx) error) error {
	if err := db.reader.PingContext(ctx); err != nil { // closed
		return err
	}
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

// Path is the database file's absolute path.
func (db *DB) Path() string { return db.path }

// Checkpointer is a connection of its own for WAL checkpoints.
func (db *DB) Checkpointer() *sql.DB { return db.checkpointer }

// Writer is the one write connection.
func (db *DB) Writer() *sql.DB { return db.writer }

// Reader is the read-only pool.
func (db *DB) Reader() *sql.DB { return db.reader }

// Dialect is SQLite's SQL.
func (db *DB) Dialect() *driver.Dialect { return &dialect }

// Write runs fn in a transaction on the writer connection. The transaction
// begins IMMEDIATE, so it holds the write lock from its first statement and
// never fails to upgrade a read lock. fn must read every *sql.Rows to the end
// before issuing another statement: the writer has one connection.
func (db *DB) Write(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, ignoreDone(tx.Rollback()))
	}
	return tx.Commit()
}

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
func (db *DB) ListenTasks(ctx context.Context, _ func(), _ func(int64)) error {
	<-ctx.Done()
	return nil
}

// Close closes the pools.
func (db *DB) Close() error {
	var errs []error
	for _, pool := range []*sql.DB{db.reader, db.checkpointer, db.writer} {
		if pool != nil {
			errs = append(errs, pool.Close())
		}
	}
	return errors.Join(errs...)
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}
