package store

import (
	"context"
	"database/sql"
	"fmt"
)

// Probe checks that the database can be read and written now: it reads a
// table and commits a real write on a fresh connection (the driver's
// Probe), all within ctx.
func (s *Store) Probe(ctx context.Context) error {
	err := s.db.Probe(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM secrets`).Scan(&n); err != nil {
			return fmt.Errorf("read: %w", err)
		}
		// Rewriting a row as it is still writes its page and commits.
		if _, err := tx.ExecContext(ctx, `UPDATE secrets SET updated_at = updated_at WHERE name = ?`, secretMasterKeyCheck); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: probe: %w", err)
	}
	return nil
}
