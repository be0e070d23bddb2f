// Package store is amsg's persistence: one SQLite database file (pure Go,
// modernc.org/sqlite) holding the secrets, the subscriptions, the delivery
// log and, as features arrive, tasks, outbox, client state and transcripts.
// All SQL lives in this package, one file per feature.
//
// The database runs in WAL mode with one writer connection, so writes queue
// in the process instead of failing with SQLITE_BUSY, beside a small pool of
// read-only connections. Times are INTEGER milliseconds UTC. Columns the
// standard keeps encrypted are sealed with the user's key in the standard's
// at-rest format; callers pass and receive plaintext.
package store

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
	"time"

	"amsg/store/usercrypt"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Defaults of Config.
const (
	DefaultDeliveryLogMaxAge  = 7 * 24 * time.Hour
	DefaultDeliveryLogMaxRows = 100_000
	DefaultMaxDevicesPerUser  = 10
	DefaultOutboxAckedMaxAge  = 7 * 24 * time.Hour
	DefaultOutboxMaxAge       = 28 * 24 * time.Hour
)

const (
	// busyTimeout bounds how long a connection waits for a lock another
	// process holds (a backup tool, the sqlite3 shell).
	busyTimeout = 5 * time.Second
	// readConns bounds the read pool: each connection has its own page cache.
	readConns = 4
)

// Config configures Open. Zero values take the defaults.
type Config struct {
	// Path is the database file. Its directory must exist.
	Path string

	// MasterKey is 64 hex characters. Empty: the stored key, else a new one
	// (stored). Given: it must pass the stored check value
	// (ErrMasterKeyMismatch), and the database keeps only that check value.
	// Given and different from the stored one: it replaces it, and every
	// value sealed under the old key becomes unreadable.
	MasterKey string
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

	Logger *slog.Logger     // nil: slog.Default()
	Now    func() time.Time // nil: time.Now
}

// Store is the database. It is safe for concurrent use.
type Store struct {
	writer  *sql.DB // one connection: SQLite has one writer anyway
	reader  *sql.DB // query_only connections
	log     *slog.Logger
	now     func() time.Time
	secrets Secrets
	keyring *usercrypt.Keyring

	closeOnce sync.Once
	closeErr  error

	deliveryLogMaxAge  time.Duration
	deliveryLogMaxRows int
	maxDevicesPerUser  int
	maxStateValueBytes int
	outboxAckedMaxAge  time.Duration
	outboxMaxAge       time.Duration
}

// Open opens (creating if needed) the database at cfg.Path, runs the
// migrations and loads or generates the secrets.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Path == "" {
		return nil, errors.New("store: no database path")
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
	if err := s.open(ctx, cfg.Path); err != nil {
		s.closeDBs()
		return nil, fmt.Errorf("store: open %s: %w", cfg.Path, err)
	}
	if err := s.migrate(ctx); err != nil {
		s.closeDBs()
		return nil, fmt.Errorf("store: migrate %s: %w", cfg.Path, err)
	}
	if err := s.loadSecrets(ctx, cfg); err != nil {
		s.closeDBs()
		return nil, fmt.Errorf("store: secrets in %s: %w", cfg.Path, err)
	}
	return s, nil
}

func (s *Store) open(ctx context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if err := prepareFile(abs); err != nil {
		return err
	}
	if s.writer, err = sql.Open("sqlite", dsn(abs, "_txlock=immediate")); err != nil {
		return err
	}
	s.writer.SetMaxOpenConns(1)
	// The first connection applies the pragmas: a file that is not a
	// database, or is locked beyond busyTimeout, fails here.
	var mode string
	if err := s.writer.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode is %q, not wal (is the file on a network file system?)", mode)
	}
	if s.reader, err = sql.Open("sqlite", dsn(abs, "_pragma=query_only(1)")); err != nil {
		return err
	}
	s.reader.SetMaxOpenConns(readConns)
	s.reader.SetMaxIdleConns(readConns)
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
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode() + "&" + extra}
	return u.String()
}

// Ping reports whether the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.reader.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// Close runs PRAGMA optimize and closes the database. Later calls return
// the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), busyTimeout)
		defer cancel()
		_, err := s.writer.ExecContext(ctx, "PRAGMA optimize")
		if err != nil {
			err = fmt.Errorf("store: optimize: %w", err)
		}
		s.closeErr = errors.Join(err, s.closeDBs())
	})
	return s.closeErr
}

func (s *Store) closeDBs() error {
	var errs []error
	for _, db := range []*sql.DB{s.reader, s.writer} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	return errors.Join(errs...)
}

// write runs fn in a transaction on the writer connection. The transaction
// begins IMMEDIATE, so it holds the write lock from its first statement and
// never fails to upgrade a read lock. fn must read every *sql.Rows to the end
// before issuing another statement: the writer has one connection.
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, ignoreDone(tx.Rollback()))
	}
	return tx.Commit()
}

// execCount runs query on the writer outside a transaction and returns the
// number of rows it changed. A failed statement is wrapped as
// "store: what: …", or returned as it is when what is "" (the caller wraps);
// the row count's own error is returned as it is.
func (s *Store) execCount(ctx context.Context, what, query string, args ...any) (int, error) {
	res, err := s.writer.ExecContext(ctx, query, args...)
	if err != nil {
		if what == "" {
			return 0, err
		}
		return 0, fmt.Errorf("store: %s: %w", what, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// millis is how times are stored: INTEGER milliseconds UTC.
func millis(t time.Time) int64 { return t.UnixMilli() }

// fromMillis is the inverse of millis.
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// userKey is the key that seals userID's columns.
func (s *Store) userKey(userID string) usercrypt.Key { return s.keyring.UserKey(userID) }
