package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"amsg/store/driver/sqlite"
)

// Backup writes a consistent copy of the SQLite database at path to dest
// with VACUUM INTO: one read transaction, so a running server keeps reading
// and writing while it runs, and the copy is compact and has no WAL of its
// own. dest must not exist. The copy holds the secrets (master key, VAPID
// private key) like the original, so it is created readable by its owner
// only.
func Backup(ctx context.Context, path, dest string) error {
	src, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("store: backup: database: %w", err)
	}
	out, err := filepath.Abs(dest)
	if err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	// Claim dest exclusively, then let VACUUM INTO fill it: SQLite writes
	// into an existing empty file, and the file keeps mode 0600.
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	if err := sqlite.VacuumInto(ctx, src, out); err != nil {
		return errors.Join(fmt.Errorf("store: backup: %w", err), os.Remove(out))
	}
	return nil
}

// ErrNotAmsgDatabase: a file offered for a restore is not a SQLite database
// amsg wrote.
var ErrNotAmsgDatabase = errors.New("not an amsg database")

// CheckRestorable checks that the SQLite file at path is an intact amsg
// database of a schema this binary can open (the same or an older
// version, which Open migrates), and returns its schema version. The file
// should be a copy: SQLite may write to it.
func CheckRestorable(ctx context.Context, path string) (int, error) {
	db, err := sqlite.OpenExisting(path)
	if err != nil {
		return 0, fmt.Errorf("store: restore: %w", err)
	}
	defer db.Close()
	var tables int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('schema_version', 'secrets')`).Scan(&tables)
	if err != nil {
		return 0, fmt.Errorf("store: restore: %w: %w", ErrNotAmsgDatabase, err)
	}
	if tables != 2 {
		return 0, fmt.Errorf("store: restore: %w: it has no schema_version and secrets tables", ErrNotAmsgDatabase)
	}
	var check string
	if err := db.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&check); err != nil {
		return 0, fmt.Errorf("store: restore: integrity check: %w", err)
	}
	if check != "ok" {
		return 0, fmt.Errorf("store: restore: the database fails its integrity check: %s", check)
	}
	version, err := schemaVersion(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("store: restore: %w", err)
	}
	if err := checkSchemaVersion(version, sqlite.LatestSchemaVersion()); err != nil {
		return 0, fmt.Errorf("store: restore: %w", err)
	}
	return version, nil
}
