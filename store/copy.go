package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// copiedTables are the tables CopyTo copies, parents before the rows that
// refer to them. Every table is here or in notCopiedTables (a test checks).
var copiedTables = []string{
	"subscriptions", "delivery_log", "client_state", "message_outbox", "tasks",
	"transcript_sessions", "transcript_entries", "broadcasts", "client_token_proofs",
	"user_preferences", "proactive_pushes", "idempotency_keys", "interrupts", "llm_credentials",
	"cloud_owners", "cloud_owned", "cloud_records", "message_events",
	"webhook_endpoints", "webhook_cursor", "webhook_deliveries",
}

// notCopiedTables: the destination has its own schema version; Open stored
// the secrets as the destination was opened with the source's; instances
// are processes of the source's database, and leader_leases their
// leaderships.
var notCopiedTables = []string{"schema_version", "secrets", "instances", "leader_leases"}

// ErrDestinationNotEmpty: CopyTo refuses to merge into a database that
// already holds data.
var ErrDestinationNotEmpty = errors.New("store: the destination database already holds data")

// CopyTo copies every row of s into dst, which must be empty and opened
// with s's secrets (so what is sealed stays readable), in one transaction on
// each side, and returns how many rows of each table it copied. It is how a
// SQLite deployment moves to PostgreSQL.
func (s *Store) CopyTo(ctx context.Context, dst *Store) (map[string]int, error) {
	if s.secrets != dst.secrets {
		return nil, errors.New("store: copy: the destination was opened with other secrets than the source")
	}
	src, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("store: copy: %w", err)
	}
	defer func() { _ = src.Rollback() }()
	var copied map[string]int
	err = dst.write(ctx, func(tx *sql.Tx) error {
		copied = map[string]int{}
		for _, table := range copiedTables {
			var rows int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&rows); err != nil {
				return err
			}
			if rows > 0 {
				return fmt.Errorf("%w (%s has %d rows)", ErrDestinationNotEmpty, table, rows)
			}
		}
		for _, table := range copiedTables {
			n, err := s.copyTable(ctx, src, tx, table)
			if err != nil {
				return fmt.Errorf("%s: %w", table, err)
			}
			copied[table] = n
		}
		for _, statement := range dst.dialect.AfterCopy {
			if _, err := tx.ExecContext(ctx, statement); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: copy: %w", err)
	}
	return copied, nil
}

// copyTable copies the source's columns of table, row by row.
func (s *Store) copyTable(ctx context.Context, src, dst *sql.Tx, table string) (int, error) {
	columns, err := queryStrings(ctx, src, s.dialect.Columns, table)
	if err != nil {
		return 0, err
	}
	rows, err := src.QueryContext(ctx, `SELECT `+strings.Join(columns, ", ")+` FROM `+table)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	insert, err := dst.PrepareContext(ctx, `INSERT INTO `+table+` (`+strings.Join(columns, ", ")+`) VALUES (?`+
		strings.Repeat(", ?", len(columns)-1)+`)`)
	if err != nil {
		return 0, err
	}
	defer insert.Close()
	values := make([]any, len(columns))
	pointers := make([]any, len(columns))
	for i := range values {
		pointers[i] = &values[i]
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(pointers...); err != nil {
			return n, err
		}
		if _, err := insert.ExecContext(ctx, values...); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}
