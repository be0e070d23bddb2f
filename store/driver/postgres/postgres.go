// Package postgres is the store's PostgreSQL driver, for several amsg
// instances on one database. It opens a database/sql pool through pgx's
// stdlib adapter, so the store's statements run unchanged: a connection
// wrapper rewrites their ? placeholders to $n.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"amsg/store/driver"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	// maxConns bounds one instance's pool; the deployment's total is
	// instances × maxConns (+1 each for LISTEN), under max_connections.
	maxConns = 10
	// maxWriteAttempts bounds the retries of a transaction that keeps losing
	// serialization conflicts.
	maxWriteAttempts = 20
)

// IsURL reports whether s names a PostgreSQL database.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// DB is an open PostgreSQL database.
type DB struct {
	pool   *sql.DB
	config *pgx.ConnConfig
}

// Open connects to the database at url (postgres://…) and checks that it
// answers.
func Open(ctx context.Context, url string) (*DB, error) {
	config, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	pool := sql.OpenDB(connector(*config))
	pool.SetMaxOpenConns(maxConns)
	pool.SetMaxIdleConns(maxConns / 2)
	if err := pool.PingContext(ctx); err != nil {
		return nil, errors.Join(err, pool.Close())
	}
	return &DB{pool: pool, config: config}, nil
}

// Writer is the pool.
func (db *DB) Writer() *sql.DB { return db.pool }

// Reader is the pool.
func (db *DB) Reader() *sql.DB { return db.pool }

// Dialect is PostgreSQL's SQL.
func (db *DB) Dialect() *driver.Dialect { return &dialect }

// Write runs fn in a SERIALIZABLE transaction: the store's read-then-write
// transactions were written for SQLite's one writer, and serializable
// isolation keeps that promise across instances. A transaction that loses a
// conflict (or a deadlock) is rolled back and run again from the start.
func (db *DB) Write(ctx context.Context, fn func(*sql.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := db.writeOnce(ctx, fn)
		if !retryable(err) || attempt == maxWriteAttempts {
			return err
		}
		// A short random pause lets the winner commit before the rerun.
		pause := time.Duration(rand.Int64N(int64(attempt) * int64(time.Millisecond)))
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(pause):
		}
	}
}

func (db *DB) writeOnce(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.pool.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, ignoreDone(tx.Rollback()))
	}
	return tx.Commit()
}

// Probe runs fn as a write: each transaction takes a pooled connection the
// pool has checked, and the server is the one thing to reach.
func (db *DB) Probe(ctx context.Context, fn func(*sql.Tx) error) error {
	return db.Write(ctx, fn)
}

// retryable reports a serialization failure or a deadlock: the transaction
// did nothing and may run again.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// Exclusive runs fn holding a session advisory lock named after name and
// the schema, on a connection of its own, so that instances starting at
// once take turns to migrate and store the first secrets.
func (db *DB) Exclusive(ctx context.Context, name string, fn func() error) error {
	conn, err := db.pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(`+lockKey+`)`, name); err != nil {
		return fmt.Errorf("advisory lock %s: %w", name, err)
	}
	fnErr := fn()
	// Unlock before the connection goes back to the pool, where a session
	// lock would otherwise stay held.
	_, err = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(`+lockKey+`)`, name)
	return errors.Join(fnErr, err)
}

// lockKey is the two-integer advisory lock key of the name given as its one
// argument, within the current schema.
const lockKey = `hashtext(current_schema()), hashtext(?)`

// Close closes the pool.
func (db *DB) Close() error { return db.pool.Close() }

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}
