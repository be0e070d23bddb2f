// Package store is amsg's persistence: the secrets, the subscriptions, the
// delivery log, tasks, outbox, client state and transcripts, in one SQLite
// file (the default) or one PostgreSQL database shared by several
// instances. The domain logic (sealing, validation, slicing, error mapping)
// and the SQL both dialects share live here, one file per feature; a driver
// (store/driver/sqlite, store/driver/postgres) opens the database, runs the
// transactions and holds the SQL the dialects disagree on.
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
	"sync"
	"time"

	"amsg/store/driver"
	"amsg/store/driver/postgres"
	"amsg/store/driver/sqlite"
	"amsg/store/usercrypt"
)

// Defaults of Config.
const (
	DefaultDeliveryLogMaxAge  = 7 * 24 * time.Hour
	DefaultDeliveryLogMaxRows = 100_000
	DefaultMaxDevicesPerUser  = 10
	DefaultOutboxAckedMaxAge  = 7 * 24 * time.Hour
	DefaultOutboxMaxAge       = 28 * 24 * time.Hour
)

// closeTimeout bounds Close's optimize step.
const closeTimeout = sqlite.BusyTimeout

// Config configures Open. Zero values take the defaults.
type Config struct {
	// Path is the SQLite database file. Its directory must exist.
	Path string
	// DatabaseURL, when set, is a PostgreSQL database (postgres://…) used
	// instead of Path.
	DatabaseURL string

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
	db      driver.Driver
	dialect *driver.Dialect
	writer  *sql.DB // the driver's pool for writes
	reader  *sql.DB // the driver's pool for reads
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

// Open opens the PostgreSQL database at cfg.DatabaseURL, or else (creating
// it if needed) the SQLite file at cfg.Path, runs the migrations and loads
// or generates the secrets.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	where := cfg.Path
	switch {
	case cfg.DatabaseURL != "":
		if !postgres.IsURL(cfg.DatabaseURL) {
			return nil, errors.New("store: the database URL must start postgres:// or postgresql://")
		}
		where = "the PostgreSQL database"
	case cfg.Path == "":
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
	if err := s.open(ctx, cfg); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", where, err)
	}
	// Instances that start at once on one database take turns: the first
	// migrates and stores the secrets, the others find them.
	err := s.db.Exclusive(ctx, "start", func() error {
		if err := s.migrate(ctx); err != nil {
			return fmt.Errorf("store: migrate %s: %w", where, err)
		}
		if err := s.loadSecrets(ctx, cfg); err != nil {
			return fmt.Errorf("store: secrets in %s: %w", where, err)
		}
		return nil
	})
	if err != nil {
		return nil, errors.Join(err, s.db.Close())
	}
	return s, nil
}

// open opens the driver cfg names.
func (s *Store) open(ctx context.Context, cfg Config) error {
	var err error
	if cfg.DatabaseURL != "" {
		s.db, err = postgres.Open(ctx, cfg.DatabaseURL)
	} else {
		s.db, err = sqlite.Open(ctx, cfg.Path)
	}
	if err != nil {
		return err
	}
	s.dialect, s.writer, s.reader = s.db.Dialect(), s.db.Writer(), s.db.Reader()
	return nil
}

// Ping reports whether the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.reader.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// Close runs the dialect's optimize step (SQLite's PRAGMA optimize) and
// closes the database. Later calls return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		var err error
		if s.dialect.Optimize != "" {
			ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
			defer cancel()
			if _, err = s.writer.ExecContext(ctx, s.dialect.Optimize); err != nil {
				err = fmt.Errorf("store: optimize: %w", err)
			}
		}
		s.closeErr = errors.Join(err, s.db.Close())
	})
	return s.closeErr
}

// write runs fn in the driver's write transaction, which behaves as if it
// were the database's only writer; fn may run more than once (see
// driver.Driver.Write). On SQLite, fn must read every *sql.Rows to the end
// before issuing another statement: the writer has one connection.
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.db.Write(ctx, fn)
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

// millis is how times are stored: INTEGER milliseconds UTC.
func millis(t time.Time) int64 { return t.UnixMilli() }

// fromMillis is the inverse of millis.
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// userKey is the key that seals userID's columns.
func (s *Store) userKey(userID string) usercrypt.Key { return s.keyring.UserKey(userID) }
