package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// Backup writes a compact, consistent copy of the database into dest, an
// existing empty file (SQLite fills it and it keeps its mode), with VACUUM
// INTO: one read transaction, so the writers of this and other processes
// go on meanwhile, and the copy has no WAL of its own. It runs on a
// connection of its own: the read pool's are query_only.
func (db *DB) Backup(ctx context.Context, dest string) error {
	conn, err := sql.Open("sqlite", dsn(db.path, ""))
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, `VACUUM INTO ?`, dest)
	return err
}

// CheckIntegrity runs PRAGMA quick_check: the b-trees are well formed and
// every page is used once, without checking that indexes match their
// tables (integrity_check would, reading the file many times over).
func (db *DB) CheckIntegrity(ctx context.Context) error {
	var result string
	if err := db.reader.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&result); err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	if result != "ok" {
		return fmt.Errorf("the database fails its integrity check: %s", result)
	}
	return nil
}
