package store

import (
	"context"
	"database/sql"
	"fmt"
)

// SchemaReport is the database schema as it stands, read from the database's own
// catalogue: what POST /init-tenant reports.
type SchemaReport struct {
	Version       int // migrations applied to the database
	LatestVersion int // migrations this build knows
	Tables        []SchemaTable
	Indexes       []SchemaIndex
}

// SchemaTable is one table and its columns in declaration order.
type SchemaTable struct {
	Name    string
	Columns []string
}

// SchemaIndex is one index, including those SQLite makes for PRIMARY KEY and
// UNIQUE constraints.
type SchemaIndex struct {
	Name    string
	Table   string
	Columns []string
	Unique  bool
	Partial bool
	// Origin is how it was made: "c" CREATE INDEX, "u" a UNIQUE constraint,
	// "pk" a PRIMARY KEY.
	Origin string
}

// Schema reports the tables and indexes of the database (the database's internal
// tables aside), ordered by name, from one snapshot.
func (s *Store) Schema(ctx context.Context) (SchemaReport, error) {
	report := SchemaReport{LatestVersion: len(s.dialect.Migrations)}
	tx, err := s.reader.BeginTx(ctx, nil)
	if err != nil {
		return SchemaReport{}, fmt.Errorf("store: schema: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if report.Version, err = schemaVersion(ctx, tx); err != nil {
		return SchemaReport{}, fmt.Errorf("store: schema: %w", err)
	}
	tables, err := queryStrings(ctx, tx, s.dialect.Tables)
	if err != nil {
		return SchemaReport{}, fmt.Errorf("store: schema: %w", err)
	}
	for _, table := range tables {
		columns, err := queryStrings(ctx, tx, s.dialect.Columns, table)
		if err != nil {
			return SchemaReport{}, fmt.Errorf("store: schema of %s: %w", table, err)
		}
		report.Tables = append(report.Tables, SchemaTable{Name: table, Columns: columns})
		indexes, err := s.tableIndexes(ctx, tx, table)
		if err != nil {
			return SchemaReport{}, fmt.Errorf("store: indexes of %s: %w", table, err)
		}
		report.Indexes = append(report.Indexes, indexes...)
	}
	return report, nil
}

func (s *Store) tableIndexes(ctx context.Context, tx *sql.Tx, table string) ([]SchemaIndex, error) {
	rows, err := tx.QueryContext(ctx, s.dialect.Indexes, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var indexes []SchemaIndex
	for rows.Next() {
		ix := SchemaIndex{Table: table}
		if err := rows.Scan(&ix.Name, &ix.Unique, &ix.Origin, &ix.Partial); err != nil {
			return nil, err
		}
		indexes = append(indexes, ix)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close() // before the next queries on the transaction's one connection
	for i := range indexes {
		if indexes[i].Columns, err = queryStrings(ctx, tx, s.dialect.IndexColumns, indexes[i].Name); err != nil {
			return nil, err
		}
	}
	return indexes, nil
}

func queryStrings(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
