package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations is the schema's history, oldest first. Step i brings the
// schema to version i+1; a database records its version in schema_version.
// Append only: never edit or reorder a step that has shipped. A feature adds
// its schema as a constant in its own file and one line here.
var migrations = []func(*sql.Tx) error{
	schema(secretsSchema),       // secrets.go
	schema(subscriptionsSchema), // subscriptions.go
	schema(deliveryLogSchema),   // deliverylog.go
	schema(clientStateSchema),   // clientstate.go
	schema(outboxSchema),        // outbox.go
	schema(tasksSchema),         // tasks.go
	schema(transcriptsSchema),   // transcripts.go
	schema(broadcastsSchema),    // admin.go
	schema(tokenProofsSchema),   // tokenproofs.go
	schema(devicesSchema),       // devices.go
}

// schema is a migration step that runs a fixed block of SQL statements.
func schema(statements string) func(*sql.Tx) error {
	return func(tx *sql.Tx) error {
		_, err := tx.Exec(statements)
		return err
	}
}

// migrate brings the database to len(migrations), one transaction per step.
// Each step re-reads the version inside its transaction, so two processes
// opening the same new file do not apply a step twice.
func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.writer.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	from, err := schemaVersion(ctx, s.writer)
	if err != nil {
		return err
	}
	if from > len(migrations) {
		return fmt.Errorf("database schema version %d is newer than this amsg understands (%d); run a newer amsg", from, len(migrations))
	}
	for i := from; i < len(migrations); i++ {
		version := i + 1
		err := s.write(ctx, func(tx *sql.Tx) error {
			current, err := schemaVersion(ctx, tx)
			if err != nil || current >= version {
				return err
			}
			if err := migrations[i](tx); err != nil {
				return err
			}
			if _, err := tx.Exec(`DELETE FROM schema_version`); err != nil {
				return err
			}
			_, err = tx.Exec(`INSERT INTO schema_version (version) VALUES (?)`, version)
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
