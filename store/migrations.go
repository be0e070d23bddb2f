package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ErrSchemaNewer: the database was migrated by a newer amsg than this one,
// which refuses to touch it rather than misread it (docs/upgrading.md).
var ErrSchemaNewer = errors.New("the database schema is newer than this amsg understands: run the newer amsg, or restore a backup taken before the upgrade (docs/upgrading.md)")

// The schema's history lives in each driver's Dialect.Migrations, oldest
// first: step i brings the schema to version i+1, and a database records its
// version in schema_version. Append only: never edit or reorder a step that
// has shipped. A feature adds its schema as one step at the end of both
// dialects' lists.

// migrate brings the database to the dialect's latest version, one
// transaction per step. Open runs it holding the driver's "start" lock, so
// instances that start at once migrate once; each step re-reads the version
// inside its transaction as well.
func (s *Store) migrate(ctx context.Context) error {
	migrations := s.dialect.Migrations
	if _, err := s.writer.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	from, err := schemaVersion(ctx, s.writer)
	if err != nil {
		return err
	}
	if err := checkSchemaVersion(from, len(migrations)); err != nil {
		return err
	}
	for i := from; i < len(migrations); i++ {
		version := i + 1
		err := s.write(ctx, func(tx *sql.Tx) error {
			current, err := schemaVersion(ctx, tx)
			if err != nil || current >= version {
				return err
			}
			if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM schema_version`); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (?)`, version)
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %d: %w", version, err)
		}
	}
	if from < len(migrations) {
		s.log.Info("store: schema migrated", "from", from, "to", len(migrations))
	}
	return nil
}

type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// schemaVersion is the recorded version, 0 for a new database.
func schemaVersion(ctx context.Context, q queryRower) (int, error) {
	var version int
	err := q.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&version)
	return version, err
}

// checkSchemaVersion refuses a schema version past latest, the newest this
// binary knows.
func checkSchemaVersion(version, latest int) error {
	if version > latest {
		return fmt.Errorf("%w (schema version %d, this amsg knows up to %d)", ErrSchemaNewer, version, latest)
	}
	return nil
}
