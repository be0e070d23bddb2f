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
