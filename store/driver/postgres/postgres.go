// Package postgres is the store's PostgreSQL driver, for several amsg
// instances on one database. It opens a database/sql pool through pgx's
// stdlib adapter, so the store's statements run unchanged: a connection
// wrapper rewrites their ? placeholders to $n.
package postgres

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"amsg/store/driver"
	"amsg/store/driver/batch"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	// maxConns bounds one instance's pool; the deployment's total is
	// instances × maxConns (+1 each for LISTEN), under max_connections.
	// Without a direct url, each leadership an instance holds
	// (instances.go) keeps one of them while it leads, so maxConns must
	// exceed their number by what the delivery path needs at once: with 2
	// a leading instance hung at its first writes.
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
	pool *sql.DB
	// session holds what needs a server session of its own: the start
	// lock and leadership (session advisory locks). listenConfig is
	// LISTEN's connection. Both are the database itself: the pool and url's
	// config, or, behind a transaction pooler, the direct URL's.
	session      *sql.DB
	listenConfig *pgx.ConnConfig
	// pollOnly: behind a transaction pooler without a direct URL
	// (leader_lease.go); session and listenConfig are unused.
	pollOnly bool
	// locked is WriteLocked's group commit (group.go).
	locked  *batch.Batcher[*lockedWrite]
	commits atomic.Uint64 // write transactions committed
	log     *slog.Logger
}

// PoolerTransaction declares that the database URL goes through a
// transaction pooler (AMSG_DATABASE_POOLER=transaction), which Open
// otherwise detects.
const PoolerTransaction = "transaction"

// sessionConns bounds the direct connections behind a pooler: the start
// lock and one per leadership held.
const sessionConns = 4

// Open connects to the database at url (postgres://…) and checks that it
// answers. Behind a transaction pooler (pooler is PoolerTransaction, or
// Open finds two connections sharing a server session) the pool sends no
// named prepared statements (pgx's simple protocol, statements kept on the
// client); then directURL, when given, is the same database without the
// pooler, for the start lock, leadership and LISTEN, and without it the
// database is poll-only (leader_lease.go).
func Open(ctx context.Context, url, directURL, pooler string, log *slog.Logger) (*DB, error) {
	config, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	pooled := directURL != "" || pooler == PoolerTransaction
	if !pooled {
		// The probe's pool changes nothing in a server session (as the
		// pool's flushCommits would), since behind a pooler other
		// clients share it.
		probe, err := openConfigured(ctx, config, false)
		if err != nil {
			return nil, err
		}
		shared, err := sharedSessions(ctx, probe)
		if err := errors.Join(err, probe.Close()); err != nil {
			return nil, err
		}
		pooled = shared
	}
	pool, err := openPool(ctx, config, pooled)
	if err != nil {
		return nil, err
	}
	if directURL == "" {
		db := newDB(pool, pool, config, log)
		db.pollOnly = pooled
		return db, nil
	}
	direct, err := pgx.ParseConfig(directURL)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("direct database url: %w", err), pool.Close())
	}
	session := sql.OpenDB(connector(*direct, false))
	session.SetMaxOpenConns(sessionConns)
	if err := session.PingContext(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("direct database url: %w", err), session.Close(), pool.Close())
	}
	return newDB(pool, session, direct, log), nil
}

func newDB(pool, session *sql.DB, listenConfig *pgx.ConnConfig, log *slog.Logger) *DB {
	db := &DB{pool: pool, session: session, listenConfig: listenConfig, log: log}
	db.startGroupCommit()
	return db
}

// openPool opens the pool of config and checks that it answers; pooled
// keeps prepared statements on the client, and a pool that is not commits
// with a local flush (flushCommits).
func openPool(ctx context.Context, config *pgx.ConnConfig, pooled bool) (*sql.DB, error) {
	config = config.Copy()
	if pooled {
		config.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	} else {
		flushCommits(config) // commitflush.go
	}
	return openConfigured(ctx, config, pooled)
}

// openConfigured opens the pool of config as it is and checks that it
// answers; clientStatements keeps prepared statements on the client.
func openConfigured(ctx context.Context, config *pgx.ConnConfig, clientStatements bool) (*sql.DB, error) {
	pool := sql.OpenDB(connector(*config, clientStatements))
	pool.SetMaxOpenConns(maxConns)
	// Every connection stays open between bursts: each new one is a new
	// server process, and a burst that reopened half the pool paid for
	// dozens of them (86 sessions for 3 000 pushes).
	pool.SetMaxIdleConns(maxConns)
	if err := pool.PingContext(ctx); err != nil {
		return nil, errors.Join(err, pool.Close())
	}
	return pool, nil
}

// sharedSessions reports whether two connections of pool share a server
// session, which only a transaction (or statement) pooler does: a statement
// prepared by name on one connection is missing on it, or visible on the
// other. The probe runs on the simple protocol, which prepares nothing
// itself.
func sharedSessions(ctx context.Context, pool *sql.DB) (bool, error) {
	var random [8]byte
	_, _ = rand.Read(random[:])
	name := fmt.Sprintf("amsg_session_probe_%x", random)
	count := func(conn *sql.Conn) (int, error) {
		var n int
		err := conn.QueryRowContext(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE name = ?`,
			pgx.QueryExecModeSimpleProtocol, name).Scan(&n)
		return n, err
	}
	first, err := pool.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer first.Close()
	if _, err := first.ExecContext(ctx, `PREPARE `+name+` AS SELECT 1`, pgx.QueryExecModeSimpleProtocol); err != nil {
		return false, fmt.Errorf("session probe: %w", err)
	}
	// Behind a pooler this may reach another session: nothing to undo.
	defer func() {
		_, _ = first.ExecContext(context.WithoutCancel(ctx), `DEALLOCATE `+name, pgx.QueryExecModeSimpleProtocol)
	}()
	own, err := count(first)
	if err != nil || own == 0 {
		return own == 0, err
	}
	second, err := pool.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer second.Close()
	other, err := count(second)
	return other > 0, err
}

// Writer is the pool.
func (db *DB) Writer() *sql.DB { return db.pool }

// Reader is the pool.
func (db *DB) Reader() *sql.DB { return db.pool }

// Dialect is PostgreSQL's SQL.
func (db *DB) Dialect() *driver.Dialect { return &dialect }

// Write runs fn in a SERIALIZABLE transaction: the store's read-then-write
// transactions were written for SQLite's one writer, and serializable
// isolation keeps that promise across instances.
func (db *DB) Write(ctx context.Context, fn func(*sql.Tx) error) error {
	return retry(ctx, func() error { return db.inTx(ctx, sql.LevelSerializable, fn) })
}

// retry runs tx, a transaction, again from the start while it loses a
// serialization conflict or a deadlock, up to maxWriteAttempts times.
func retry(ctx context.Context, tx func() error) error {
	for attempt := 1; ; attempt++ {
		err := tx()
		if !retryable(err) || attempt == maxWriteAttempts {
			return err
		}
		// A random pause lets the winner commit before the rerun; its bound
		// doubles with each loss (up to 256 ms), so many writers contending
		// for one user's rows spread out instead of colliding again.
		pause := time.Duration(mathrand.Int64N(int64(min(1<<attempt, 256)) * int64(time.Millisecond)))
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(pause):
		}
	}
}

func (db *DB) inTx(ctx context.Context, level sql.IsolationLevel, fn func(*sql.Tx) error) error {
	tx, err := db.pool.BeginTx(ctx, &sql.TxOptions{Isolation: level})
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, ignoreDone(tx.Rollback()))
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	db.commits.Add(1)
	return nil
}

// Commits is how many write transactions this process has committed.
func (db *DB) Commits() uint64 { return db.commits.Load() }

// StatementContext keeps ctx: a cancelled statement ends on the server and
// rolls back only its own transaction.
func (db *DB) StatementContext(ctx context.Context) context.Context { return ctx }

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
	if db.pollOnly {
		return db.exclusiveInTransaction(ctx, name, fn)
	}
	conn, err := db.session.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := lockPatiently(ctx, db.log, conn, false, `SELECT pg_advisory_lock(`+lockKey+`)`, name, lockWaitReport); err != nil {
		return err
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

// Close ends the group commit (WriteLocked then returns
// driver.ErrClosed), and closes the pool and the direct connections behind
// a pooler.
func (db *DB) Close() error {
	db.locked.Close()
	if db.session != db.pool {
		return errors.Join(db.session.Close(), db.pool.Close())
	}
	return db.pool.Close()
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}
