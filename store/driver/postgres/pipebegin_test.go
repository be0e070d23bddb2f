package postgres

import (
	"context"
	"database/sql"
	"reflect"
	"testing"
)

// openTestDB opens the development server's database as the store does.
func openTestDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(t.Context(), testDatabaseURL(t), "", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// scanAll reads query's one row as database/sql hands it over.
func scanAll(t *testing.T, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) []any {
	t.Helper()
	rows, err := q.QueryContext(t.Context(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	columns, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	values := make([]any, len(columns))
	dest := make([]any, len(columns))
	for i := range values {
		dest[i] = &values[i]
	}
	if !rows.Next() {
		t.Fatalf("%s: no row (%v)", query, rows.Err())
	}
	if err := rows.Scan(dest...); err != nil {
		t.Fatal(err)
	}
	if rows.Next() {
		t.Fatalf("%s: a second row", query)
	}
	return values
}

// A transaction's first statement goes with its BEGIN and hands its rows
// to database/sql as stdlib hands the rows of any other statement.
func TestTheFirstStatementsRowsAreAsStdlibs(t *testing.T) {
	db := openTestDB(t)
	const query = `SELECT ?::int2, ?::int4, ?::int8, true, 'text'::text, '\x01ff'::bytea, '{"a": 1}'::json,
		'{"b": 2}'::jsonb, 1.5::float8, 2.5::float4, NULL::int8, NULL::text, 12.5::numeric,
		'2026-11-27 04:00:00+00'::timestamptz, 'x'::varchar`
	args := []any{int64(-2), int64(70000), int64(1) << 40}
	want := scanAll(t, db.pool, query, args...)
	if want[2] != int64(1)<<40 || want[4] != "text" {
		t.Fatalf("stdlib's row %v", want)
	}
	tx, err := db.pool.BeginTx(t.Context(), &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	got := scanAll(t, tx, query, args...)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the first statement's row\n%#v\nwant stdlib's\n%#v", got, want)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// The BEGIN sent with the first statement opens the transaction that
// statement runs in, at its isolation level, with or without arguments;
// the rollback undoes the first statement with the rest.
func TestTheBeginGoesWithTheFirstStatement(t *testing.T) {
	db := openTestDB(t)
	ctx := t.Context()
	conn, err := db.pool.Conn(ctx) // one session: its temporary table
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, level := range []struct {
		level sql.IsolationLevel
		name  string
	}{{sql.LevelReadCommitted, "read committed"}, {sql.LevelSerializable, "serializable"}} {
		for _, first := range []struct {
			name  string
			query string
			args  []any
		}{
			{"without arguments", `SELECT current_setting('transaction_isolation'), pg_current_xact_id()::text`, nil},
			{"with arguments", `SELECT current_setting(?), pg_current_xact_id()::text`, []any{"transaction_isolation"}},
		} {
			tx, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: level.level})
			if err != nil {
				t.Fatal(err)
			}
			got := scanAll(t, tx, first.query, first.args...)
			if got[0] != level.name {
				t.Errorf("%s, first statement %s: isolation %v", level.name, first.name, got[0])
			}
			if second := xactID(t, tx); second != got[1] {
				t.Errorf("%s, first statement %s: in transaction %v, the second in %s", level.name, first.name, got[1], second)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}

	for _, first := range []struct {
		name string
		args []any
	}{{"without arguments", nil}, {"with arguments", []any{1}}} {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		create := `CREATE TEMPORARY TABLE pipe_begin (n int)`
		if first.args != nil {
			create = `CREATE TEMPORARY TABLE pipe_begin AS SELECT ?::int AS n`
		}
		if _, err := tx.ExecContext(ctx, create, first.args...); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		var gone bool
		if err := conn.QueryRowContext(ctx, `SELECT to_regclass('pg_temp.pipe_begin') IS NULL`).Scan(&gone); err != nil {
			t.Fatal(err)
		}
		if !gone {
			t.Fatalf("first statement %s: the rollback left the table it created", first.name)
		}
	}

	// A transaction that ran nothing commits and rolls back as any other.
	for _, end := range []func(*sql.Tx) error{(*sql.Tx).Commit, (*sql.Tx).Rollback} {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := end(tx); err != nil {
			t.Fatal(err)
		}
	}
	if xactID(t, conn) == xactID(t, conn) {
		t.Errorf("after transactions that ran nothing, two statements ran in one transaction")
	}
}

// xactID is the id of the transaction a statement of q runs in.
func xactID(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) string {
	t.Helper()
	var id string
	if err := q.QueryRowContext(t.Context(), `SELECT pg_current_xact_id()::text`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}
