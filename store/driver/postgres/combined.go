package postgres

import (
	"context"
	"database/sql"

	"amsg/store/driver"
)

// WriteCombined runs item alone in a write of its own (WriteLocked): the
// store batches PostgreSQL's delivery writes itself, into statements of
// column arrays (driver.Dialect.BatchStatements).
func (db *DB) WriteCombined(ctx context.Context, kind *driver.WriteKind, item any) error {
	return db.WriteLocked(ctx, func(tx *sql.Tx) error { return kind.Combine(ctx, tx, []any{item}) })
}
