package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
)

// Probe checks that the database file can be read and written now. The
// store's own connections would not notice: they keep a deleted or replaced
// file open and were opened writable. So the probe opens a fresh connection
// to the file at its path (without creating it), reads a table and commits
// a real write, all within ctx.
func (s *Store) Probe(ctx context.Context) error {
	var path string
	if err := s.reader.QueryRowContext(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&path); err != nil {
		return fmt.Errorf("store: probe: %w", err)
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("store: probe: %w", err)
	}
	db, err := sql.Open("sqlite", dsn(path, "mode=rw&_txlock=immediate"))
	if err != nil {
		return fmt.Errorf("store: probe: %w", err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: probe: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM secrets`).Scan(&n); err != nil {
		return fmt.Errorf("store: probe read: %w", err)
	}
	// Rewriting a row as it is still writes its page and commits.
	if _, err := tx.ExecContext(ctx, `UPDATE secrets SET updated_at = updated_at WHERE name = ?`, secretMasterKeyCheck); err != nil {
		return fmt.Errorf("store: probe write: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: probe write: %w", err)
	}
	return nil
}
