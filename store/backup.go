package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
)

// Backup writes a consistent copy of the database cfg names to dest with
// its driver (driver.Driver.Backup: SQLite's VACUUM INTO, one read
// transaction, so a running server keeps reading and writing while it
// runs; PostgreSQL refuses and names pg_dump). dest must not exist. The
// copy holds the secrets (master key, VAPID private key) like the
// original, so it is created readable by its owner only.
func Backup(ctx context.Context, cfg Config, dest string) error {
	if err := backup(ctx, cfg, dest); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	return nil
}

func backup(ctx context.Context, cfg Config, dest string) (err error) {
	if _, err := databaseName(cfg); err != nil {
		return err
	}
	out, err := filepath.Abs(dest)
	if err != nil {
		return err
	}
	db, err := openDriver(ctx, cfg, cmp.Or(cfg.Logger, slog.Default()), false)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	// Claim dest exclusively, then let the driver fill it: SQLite writes
	// into an existing empty file, and the file keeps mode 0600.
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := db.Backup(ctx, out); err != nil {
		return errors.Join(err, os.Remove(out))
	}
	return nil
}

// ErrNotAmsgDatabase: a file offered for a restore is not a database amsg
// wrote.
var ErrNotAmsgDatabase = errors.New("not an amsg database")

// CheckRestorable checks that the SQLite file at path is an intact amsg
// database of a schema this binary can open (the same or an older
// version, which Open migrates), and returns its schema version. The file
// should be a copy: SQLite may write to it.
func CheckRestorable(ctx context.Context, path string) (int, error) {
	version, err := checkRestorable(ctx, path)
	if err != nil {
		return 0, fmt.Errorf("store: restore: %w", err)
	}
	return version, nil
}

func checkRestorable(ctx context.Context, path string) (version int, err error) {
	db, err := openDriver(ctx, Config{Path: path}, slog.Default(), false)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNotAmsgDatabase, err)
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	tables, err := readStrings(ctx, db.Reader(), db.Dialect().Tables)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNotAmsgDatabase, err)
	}
	if !slices.Contains(tables, "schema_version") || !slices.Contains(tables, "secrets") {
		return 0, fmt.Errorf("%w: it has no schema_version and secrets tables", ErrNotAmsgDatabase)
	}
	if err := db.CheckIntegrity(ctx); err != nil {
		return 0, err
	}
	if version, err = schemaVersion(ctx, db.Reader()); err != nil {
		return 0, err
	}
	if err := checkSchemaVersion(version, len(db.Dialect().Migrations)); err != nil {
		return 0, err
	}
	return version, nil
}

// readStrings is queryStrings in a read-only transaction of its own.
func readStrings(ctx context.Context, db *sql.DB, query string) ([]string, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	return queryStrings(ctx, tx, query)
}
