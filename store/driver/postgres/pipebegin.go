package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// A transaction's BEGIN goes to the server with its first statement, in
// one round trip where pgx's stdlib adapter sends it alone and waits for
// its answer (issue 24: each round trip costs amsg a write, a wait and a
// wake-up, and PostgreSQL a read and a reply). A first statement without
// arguments (the claim's ClaimPlan) is one simple query after the BEGIN;
// one with arguments is a pgx batch of the two, whose rows pipeRows hands
// to database/sql as stdlib's rows would be. A transaction that runs no
// statement sends nothing, not even its COMMIT. Behind a transaction
// pooler (clientStatements) transactions begin as pgx begins them.

// pendingBegin is one connection's BEGIN not yet sent, "" when none is.
type pendingBegin struct{ sql string }

// beginSQL is the BEGIN of opts.
func beginSQL(opts driver.TxOptions) (string, error) {
	begin := "begin"
	switch sql.IsolationLevel(opts.Isolation) {
	case sql.LevelDefault:
	case sql.LevelReadCommitted:
		begin += " isolation level read committed"
	case sql.LevelRepeatableRead:
		begin += " isolation level repeatable read"
	case sql.LevelSerializable:
		begin += " isolation level serializable"
	default:
		return "", fmt.Errorf("unsupported isolation: %v", opts.Isolation)
	}
	if opts.ReadOnly {
		begin += " read only"
	}
	return begin, nil
}

func (c rebindConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.pending == nil {
		return c.Conn.BeginTx(ctx, opts)
	}
	if c.Conn.Conn().IsClosed() {
		return nil, driver.ErrBadConn
	}
	begin, err := beginSQL(opts)
	if err != nil {
		return nil, err
	}
	*c.pending = pendingBegin{sql: begin}
	return pipeTx{c, ctx}, nil
}

// takeBegin returns the pending BEGIN, now no longer pending.
func (c rebindConn) takeBegin() string {
	if c.pending == nil {
		return ""
	}
	begin := c.pending.sql
	*c.pending = pendingBegin{}
	return begin
}

// execBegun runs query, already rebound, after begin.
func (c rebindConn) execBegun(ctx context.Context, begin, query string, args []driver.NamedValue) (driver.Result, error) {
	conn := c.Conn.Conn()
	if len(args) == 0 {
		results, err := conn.PgConn().Exec(ctx, begin+"; "+query).ReadAll()
		if err != nil {
			return nil, badConn(err)
		}
		return driver.RowsAffected(results[len(results)-1].CommandTag.RowsAffected()), nil
	}
	br := conn.SendBatch(ctx, beginBatch(begin, query, args))
	_, err := br.Exec()
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if err := errors.Join(err, br.Close()); err != nil {
		return nil, badConn(err)
	}
	return driver.RowsAffected(tag.RowsAffected()), nil
}

// queryBegun runs query, already rebound, after begin.
func (c rebindConn) queryBegun(ctx context.Context, begin, query string, args []driver.NamedValue) (driver.Rows, error) {
	conn := c.Conn.Conn()
	br := conn.SendBatch(ctx, beginBatch(begin, query, args))
	if _, err := br.Exec(); err != nil {
		return nil, badConn(errors.Join(err, br.Close()))
	}
	rows, err := br.Query()
	if err != nil {
		return nil, errors.Join(err, br.Close())
	}
	// Read the first row now, as stdlib does, so that the columns are
	// known when database/sql asks for them.
	more := rows.Next()
	if err := rows.Err(); err != nil {
		rows.Close()
		return nil, errors.Join(err, br.Close())
	}
	return &pipeRows{rows: rows, batch: br, typeMap: conn.TypeMap(), preloaded: true, more: more}, nil
}

// badConn is err as stdlib returns it: a network error before anything
// was sent discards the connection.
func badConn(err error) error {
	if pgconn.SafeToRetry(err) {
		return driver.ErrBadConn
	}
	return err
}

func beginBatch(begin, query string, args []driver.NamedValue) *pgx.Batch {
	values := make([]any, len(args))
	for i, a := range args {
		values[i] = a.Value
	}
	b := &pgx.Batch{}
	b.Queue(begin)
	b.Queue(query, values...)
	return b
}

// pipeTx ends a transaction whose BEGIN was pending: one that ran no
// statement has nothing on the server to end. ctx is BeginTx's, as in
// stdlib.
type pipeTx struct {
	c   rebindConn
	ctx context.Context
}

func (t pipeTx) Commit() error {
	ctx := t.ctx
	if t.c.takeBegin() != "" {
		return nil
	}
	conn := t.c.Conn.Conn()
	tag, err := conn.Exec(ctx, "commit")
	if err != nil {
		if conn.PgConn().TxStatus() != 'I' {
			_ = conn.Close(ctx) // as pgx does: the error says enough
		}
		return err
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

func (t pipeTx) Rollback() error {
	ctx := t.ctx
	if t.c.takeBegin() != "" {
		return nil
	}
	conn := t.c.Conn.Conn()
	if _, err := conn.Exec(ctx, "rollback"); err != nil {
		_ = conn.Close(ctx) // as pgx does: the connection's state is unknown
		return err
	}
	return nil
}

// pipeRows are a batch's rows as database/sql reads them: each value as
// stdlib converts it (an integer as int64, bytea as []byte, text as
// string), and the batch closed with them.
type pipeRows struct {
	rows      pgx.Rows
	batch     pgx.BatchResults
	typeMap   *pgtype.Map
	preloaded bool // the first row was read by queryBegun
	more      bool
}

func (r *pipeRows) Columns() []string {
	fields := r.rows.FieldDescriptions()
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return names
}

func (r *pipeRows) Close() error {
	r.rows.Close()
	return errors.Join(r.rows.Err(), r.batch.Close())
}

func (r *pipeRows) Next(dest []driver.Value) error {
	more := r.more
	if r.preloaded {
		r.preloaded = false
	} else {
		more = r.rows.Next()
	}
	if !more {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return io.EOF
	}
	fields := r.rows.FieldDescriptions()
	for i, raw := range r.rows.RawValues() {
		if raw == nil {
			dest[i] = nil
			continue
		}
		v, err := r.value(fields[i], raw)
		if err != nil {
			return fmt.Errorf("convert field %d failed: %w", i, err)
		}
		dest[i] = v
	}
	return nil
}

// value converts raw, a value of field, to the type stdlib gives it.
func (r *pipeRows) value(field pgconn.FieldDescription, raw []byte) (driver.Value, error) {
	scan := func(target any) error {
		return r.typeMap.PlanScan(field.DataTypeOID, field.Format, target).Scan(raw, target)
	}
	switch field.DataTypeOID {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.OIDOID, pgtype.XIDOID, pgtype.CIDOID:
		var n int64
		return n, scan(&n)
	case pgtype.BoolOID:
		var b bool
		return b, scan(&b)
	case pgtype.Float4OID, pgtype.Float8OID:
		var f float64
		return f, scan(&f)
	case pgtype.ByteaOID, pgtype.JSONOID, pgtype.JSONBOID, pgtype.XMLOID:
		var b []byte
		return b, scan(&b)
	case pgtype.DateOID, pgtype.TimestampOID, pgtype.TimestamptzOID:
		var t time.Time
		return t, scan(&t)
	}
	var s string
	return s, scan(&s)
}
