// Package store is amsg's persistence: the secrets, the subscriptions, the
// delivery log, tasks, outbox, client state and transcripts, in one SQLite
// file (the default) or one PostgreSQL database shared by several
// instances. The domain logic (sealing, validation, slicing, error mapping)
// and the SQL both dialects share live here, one file per feature; a driver
// (store/driver/sqlite, store/driver/postgres) opens the database, runs the
// transactions and holds the SQL the dialects disagree on.
//
// Writes go through the driver: on SQLite a group commit on its one writer
// connection; on PostgreSQL a serializable transaction of its own on the
// pool (driver.Driver.Write), or, for the delivery path's writes whose
// statements lock their own rows, a READ COMMITTED group commit
// (driver.Driver.WriteLocked). Outbox appends and one-off completions are
// batched by the store too, into multi-row statements (batches.go). The
// hot statements are prepared once. openDriver is the one place that picks
// a driver.
//
// Times are INTEGER milliseconds UTC. Columns the standard keeps encrypted
// are sealed with the user's key in the standard's at-rest format; callers
// pass and receive plaintext.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"amsg/push"
	"amsg/push/tracing"
	"amsg/store/driver"
	"amsg/store/usercrypt"
)

// Defaults of Config.
const (
	DefaultDeliveryLogMaxAge  = 7 * 24 * time.Hour
	DefaultDeliveryLogMaxRows = 100_000
	DefaultMaxDevicesPerUser  = 10
	DefaultOutboxAckedMaxAge  = 7 * 24 * time.Hour
	DefaultOutboxMaxAge       = 28 * 24 * time.Hour
	// DefaultOutboxMaxRowsPerUser caps a user's outbox: at about 4.2 KiB a
	// row (README, "Disk"), about 4.2 MiB a user.
	DefaultOutboxMaxRowsPerUser = 1000
)

// errClosed is a write to a closed store.
var errClosed = fmt.Errorf("store: %w", push.ErrStoreClosed)

// Config configures Open. Zero values take the defaults.
type Config struct {
	// Path is the SQLite database file. Its directory must exist.
	Path string
	// DatabaseURL, when set, is a PostgreSQL database (postgres://…) used
	// instead of Path.
	DatabaseURL string
	// DatabaseDirectURL, when set, is the same PostgreSQL database without
	// the transaction pooler (PgBouncer) DatabaseURL goes through: the
	// start lock, leadership and LISTEN use it, and the pool prepares no
	// statements on the server.
	DatabaseDirectURL string
	// DatabasePooler is "transaction" when DatabaseURL goes through a
	// transaction pooler; "" detects one. Behind one, without
	// DatabaseDirectURL, the database is poll-only (Store.PollOnly).
	DatabasePooler string

	// MasterKey is 64 hex characters. Empty: the stored key, else a new one
	// (stored). Given: it must pass the stored check value
	// (ErrMasterKeyMismatch), and the database keeps only that check value.
	// Given and different from the stored one: it replaces it, and every
	// value sealed under the old key becomes unreadable.
	MasterKey string
	// StoreMasterKey keeps a given MasterKey in the database, as a generated
	// one is, instead of only its check value: how amsg migrate carries a
	// data directory's generated key to a database the instances share.
	StoreMasterKey bool
	// VAPIDPublicKey (base64url of the 65-byte uncompressed P-256 point) and
	// VAPIDPrivateKey (base64url of the 32-byte scalar) are given together or
	// not at all. Empty: the stored pair, else one from GenerateVAPID. Given
	// and different from the stored pair: it replaces it, which orphans every
	// browser subscription.
	VAPIDPublicKey  string
	VAPIDPrivateKey string
	// GenerateVAPID makes a key pair when none is given or stored.
	GenerateVAPID func() (public, private string, err error)

	// DeliveryLogMaxAge and DeliveryLogMaxRows bound the delivery log;
	// PruneDeliveryLog enforces them.
	DeliveryLogMaxAge  time.Duration
	DeliveryLogMaxRows int
	// MaxDevicesPerUser bounds the subscriptions of one user: registering
	// one more evicts the least recently updated.
	MaxDevicesPerUser int
	// MaxStateValueBytes bounds one client-state value, in UTF-8 bytes
	// (default DefaultMaxStateValueBytes, 5 MiB).
	MaxStateValueBytes int
	// OutboxAckedMaxAge and OutboxMaxAge are the outbox's retention:
	// CleanupOutbox deletes rows acknowledged longer ago than the first and
	// any row created longer ago than the second (default 7 and 28 days).
	OutboxAckedMaxAge time.Duration
	OutboxMaxAge      time.Duration
	// OutboxMaxRowsPerUser caps each user's outbox: CleanupOutbox deletes
	// the rows over it, delivered or acknowledged ones first, oldest first
	// (default DefaultOutboxMaxRowsPerUser).
	OutboxMaxRowsPerUser int
	// MessageEventsMaxRows caps the message events: Prune deletes the
	// oldest beyond it (default DefaultMessageEventsMaxRows).
	MessageEventsMaxRows int

	Logger *slog.Logger     // nil: slog.Default()
	Now    func() time.Time // nil: time.Now
}

// Store is the database. It is safe for concurrent use.
type Store struct {
	db      driver.Driver
	dialect *driver.Dialect
	writer  *sql.DB     // the driver's pool for writes (SQLite: one connection)
	reader  *sql.DB     // the driver's pool for reads
	closed  atomic.Bool // Close was called
	// stmts are the hot statements (preparedSQL), prepared on the writer;
	// readStmts the hot reads (preparedRead), prepared on the read pool.
	stmts     map[string]*sql.Stmt
	readStmts map[string]*sql.Stmt
	log       *slog.Logger
	now       func() time.Time
	secrets   Secrets
	// masterKeyStored: the database keeps the master key itself, not
	// only its check value.
	masterKeyStored bool
	keyring         *usercrypt.Keyring

	closeOnce sync.Once
	closeErr  error
	// completions batches the completions of one-off occurrences
	// (completions.go, batches.go).
	completions *writeBatch[completion]
	// appends batches AppendOutbox (outbox.go).
	appends *writeBatch[outboxAppend]
	// claimed are the preferences read with the last claims.
	claimed claimedPrefs
	// bound is where the next claim may start (claimbound.go).
	bound claimBound

	deliveryLogMaxAge  time.Duration
	deliveryLogMaxRows int
	maxDevicesPerUser  int
	maxStateValueBytes int
	outboxAckedMaxAge  time.Duration
	outboxMaxAge       time.Duration
	outboxMaxRows      int
	messageEventsCap   int // Config.MessageEventsMaxRows; see messageEventsMaxRows
}

// Open opens the PostgreSQL database at cfg.DatabaseURL, or else (creating
// it if needed) the SQLite file at cfg.Path, runs the migrations, prepares
// the hot statements and loads or generates the secrets.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	where, err := databaseName(cfg)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := validateGivenSecrets(cfg); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	s := &Store{
		log:                cfg.Logger,
		now:                cfg.Now,
		deliveryLogMaxAge:  cfg.DeliveryLogMaxAge,
		deliveryLogMaxRows: cfg.DeliveryLogMaxRows,
		maxDevicesPerUser:  cfg.MaxDevicesPerUser,
		maxStateValueBytes: cfg.MaxStateValueBytes,
		outboxAckedMaxAge:  cfg.OutboxAckedMaxAge,
		outboxMaxAge:       cfg.OutboxMaxAge,
		outboxMaxRows:      cfg.OutboxMaxRowsPerUser,
		messageEventsCap:   cfg.MessageEventsMaxRows,
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.deliveryLogMaxAge <= 0 {
		s.deliveryLogMaxAge = DefaultDeliveryLogMaxAge
	}
	if s.deliveryLogMaxRows <= 0 {
		s.deliveryLogMaxRows = DefaultDeliveryLogMaxRows
	}
	if s.maxDevicesPerUser <= 0 {
		s.maxDevicesPerUser = DefaultMaxDevicesPerUser
	}
	if s.maxStateValueBytes <= 0 {
		s.maxStateValueBytes = DefaultMaxStateValueBytes
	}
	if s.outboxAckedMaxAge <= 0 {
		s.outboxAckedMaxAge = DefaultOutboxAckedMaxAge
	}
	if s.outboxMaxAge <= 0 {
		s.outboxMaxAge = DefaultOutboxMaxAge
	}
	if s.outboxMaxRows <= 0 {
		s.outboxMaxRows = DefaultOutboxMaxRowsPerUser
	}
	if s.db, err = openDriver(ctx, cfg, s.log, true); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", where, err)
	}
	s.dialect, s.writer, s.reader = s.db.Dialect(), s.db.Writer(), s.db.Reader()
	// Instances that start at once on one database take turns: the first
	// migrates and stores the secrets, the others find them.
	err = s.db.Exclusive(ctx, "start", func() error {
		if err := s.migrate(ctx); err != nil {
			return fmt.Errorf("store: migrate %s: %w", where, err)
		}
		if err := s.prepareStatements(ctx); err != nil {
			return fmt.Errorf("store: prepare statements in %s: %w", where, err)
		}
		if err := s.loadSecrets(ctx, cfg); err != nil {
			return fmt.Errorf("store: secrets in %s: %w", where, err)
		}
		return nil
	})
	if err != nil {
		return nil, errors.Join(err, s.db.Close())
	}
	s.completions, s.appends = s.newCompletions(), s.newAppends()
	return s, nil
}

// Ping reports whether the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.reader.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// Close stops the writes and closes the database (the driver runs its
// closing statements: on SQLite, PRAGMA optimize and a TRUNCATE checkpoint
// of the WAL). Writes after Close fail. Later calls return the first call's
// result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.completions.close()
		s.appends.close()
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("store: close: %w", err)
		}
	})
	return s.closeErr
}

// write runs fn in a transaction of the driver (driver.Driver.Write) and
// returns fn's error or the commit's. On SQLite it is usually committed
// together with other writes waiting at the same time, so fn must read
// every *sql.Rows to the end before issuing another statement (the writer
// has one connection) and must not call write; on PostgreSQL it is a
// serializable transaction, which may run fn more than once.
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.writeWith(ctx, s.db.Write, fn)
}

// writeLocked is write for fn whose statements lock the rows they depend
// on themselves (driver.Driver.WriteLocked): on PostgreSQL it runs at READ
// COMMITTED.
func (s *Store) writeLocked(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.writeWith(ctx, s.db.WriteLocked, fn)
}

func (s *Store) writeWith(ctx context.Context, run func(context.Context, func(*sql.Tx) error) error, fn func(*sql.Tx) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx, span := tracing.Start(ctx, "store.write")
	defer func() { s.traceWrite(span, err) }()
	if s.closed.Load() {
		return errClosed
	}
	err = run(ctx, fn)
	if errors.Is(err, driver.ErrClosed) {
		return errClosed
	}
	return err
}

// execCount runs query in a write of its own and returns the number of
// rows it changed. A failed statement is wrapped as "store: what: …", or
// returned as it is when what is "" (the caller wraps).
func (s *Store) execCount(ctx context.Context, what, query string, args ...any) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, query, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil && what != "" {
		return 0, fmt.Errorf("store: %s: %w", what, err)
	}
	return int(n), err
}

// preparedQueries are the statements every delivery runs, registered by
// preparedSQL and prepared once on the writer at Open.
var preparedQueries []string

// preparedSQL registers query as a hot statement and returns it. Call it in
// a package-level var declaration.
func preparedSQL(query string) string {
	preparedQueries = append(preparedQueries, query)
	return query
}

// preparedReads are the reads every delivery runs, registered by
// preparedRead and prepared once on the read pool at Open (database/sql
// then prepares each on every pooled connection once).
var preparedReads []string

// preparedRead registers query as a hot read and returns it. Call it in a
// package-level var declaration.
func preparedRead(query string) string {
	preparedReads = append(preparedReads, query)
	return query
}

func (s *Store) prepareStatements(ctx context.Context) error {
	writes := append(slices.Clone(preparedQueries), s.claimDueSQL(), s.claimedPrefsSQL())
	if !s.dialect.ArrayParams {
		writes = append(writes, preparedChunkQueries...) // chunks.go
	}
	var err error
	if s.stmts, err = prepareAll(ctx, s.writer, writes); err != nil {
		return err
	}
	s.readStmts, err = prepareAll(ctx, s.reader, append(slices.Clone(preparedReads), s.nextClaimableSQL(), s.devicesOfSQL()))
	return err
}

func prepareAll(ctx context.Context, db *sql.DB, queries []string) (map[string]*sql.Stmt, error) {
	stmts := make(map[string]*sql.Stmt, len(queries))
	for _, q := range queries {
		if stmts[q] != nil {
			continue // a one-row chunk is often a hot statement too
		}
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", err, q)
		}
		stmts[q] = st
	}
	return stmts, nil
}

// readRow is readQuery for one row.
func (s *Store) readRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := s.readStmts[query]; st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.reader.QueryRowContext(ctx, query, args...)
}

// readQuery runs query on the read pool, on its prepared statement when it
// has one.
func (s *Store) readQuery(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := s.readStmts[query]; st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.reader.QueryContext(ctx, query, args...)
}

// txExec runs query in tx, on its prepared statement when it has one
// (Tx.StmtContext reuses a statement prepared on the transaction's
// connection rather than preparing it again), without ctx's cancellation
// as the driver wants it (driver.Driver.StatementContext).
func (s *Store) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	ctx = s.statementContext(ctx)
	if st := s.stmts[query]; st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// txQuery is txExec for a statement that returns rows.
func (s *Store) txQuery(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	ctx = s.statementContext(ctx)
	if st := s.stmts[query]; st != nil {
		return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}

// statementContext is the context a statement of a write runs with.
func (s *Store) statementContext(ctx context.Context) context.Context {
	return s.db.StatementContext(ctx)
}

// millis is how times are stored: INTEGER milliseconds UTC.
func millis(t time.Time) int64 { return t.UnixMilli() }

// fromMillis is the inverse of millis.
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// userKey is the key that seals userID's columns.
func (s *Store) userKey(userID string) usercrypt.Key { return s.keyring.UserKey(userID) }
