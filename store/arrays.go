package store

import (
	"database/sql"
	"fmt"
	"strings"

	"amsg/store/driver/pgarray"
)

// Where the driver binds a Go slice as an array (Dialect.ArrayParams:
// PostgreSQL), the delivery path's batches go in as one array per column,
// unnested: one statement text whatever a batch holds, so each pooled
// session parses it once and soon runs a cached plan, where a multi-row
// VALUES list is a statement of its own for every size, parsed and
// planned afresh on nearly every run (issue 24).

// columnTypes are the SQL types of a batch's columns, in order: "bigint",
// "text" or "bytea".
type columnTypes []string

// unnest is the SELECT of the rows whose columns are the arguments, one
// array each (arrays).
func (c columnTypes) unnest() string {
	return `SELECT * FROM unnest(?::` + strings.Join(c, `[], ?::`) + `[])`
}

// arrays turns args, the values of rows one row after the other, into one
// typed array per column (pgarray.Array: bound without reflection or an
// allocation a value), which the driver binds on the extended and the
// simple protocol alike (behind a transaction pooler).
func (c columnTypes) arrays(args []any) ([]any, error) {
	rows := len(args) / len(c)
	columns := make([]any, len(c))
	for i, typ := range c {
		var err error
		switch typ {
		case "bigint":
			columns[i], err = column(args, i, len(c), rows, bigintValue)
		case "bytea":
			columns[i], err = column(args, i, len(c), rows, byteaValue)
		default:
			columns[i], err = column(args, i, len(c), rows, textValue)
		}
		if err != nil {
			return nil, fmt.Errorf("column %d: %w", i, err)
		}
	}
	return columns, nil
}

// column is the array of the values of column i of rows rows of width
// values each, converted by value.
func column[T pgarray.Bigint | pgarray.Text | pgarray.Bytea](args []any, i, width, rows int, value func(any) (T, error)) (pgarray.Array[T], error) {
	values := make(pgarray.Array[T], rows)
	for r := range values {
		var err error
		if values[r], err = value(args[r*width+i]); err != nil {
			return nil, err
		}
	}
	return values, nil
}

func bigintValue(v any) (pgarray.Bigint, error) {
	switch v := v.(type) {
	case nil:
		return pgarray.Bigint{}, nil
	case int64:
		return pgarray.Bigint{Int64: v, Valid: true}, nil
	case int:
		return pgarray.Bigint{Int64: int64(v), Valid: true}, nil
	case sql.NullInt64:
		return pgarray.Bigint{Int64: v.Int64, Valid: v.Valid}, nil
	}
	return pgarray.Bigint{}, fmt.Errorf("%T is not a bigint", v)
}

func textValue(v any) (pgarray.Text, error) {
	switch v := v.(type) {
	case nil:
		return pgarray.Text{}, nil
	case string:
		return pgarray.Text{String: v, Valid: true}, nil
	case sql.NullString:
		return pgarray.Text{String: v.String, Valid: v.Valid}, nil
	}
	return pgarray.Text{}, fmt.Errorf("%T is not text", v)
}

func byteaValue(v any) (pgarray.Bytea, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("%T is not bytea", v)
	}
	return b, nil
}

// batchStatement is the statement that writes a batch of rows, args being
// their values one row after the other: arraysSQL with one array per column
// (typed by types) where the driver binds arrays and the batch has more
// than one row, else the multi-row statement values spells for that many
// rows, which is only built when it is the one used.
func (s *Store) batchStatement(types columnTypes, arraysSQL string, values func(rows int) string, args []any) (string, []any, error) {
	rows := len(args) / len(types)
	if s.dialect.ArrayParams && rows > 1 {
		columns, err := types.arrays(args)
		return arraysSQL, columns, err
	}
	return values(rows), args, nil
}

// The delivery path's batches as column arrays, each in the order its
// multi-row statement takes its values: outbox upserts (upsertOutboxArgs),
// message events (insertEventRows), delivery attempts
// (insertAttempts), and the fences of completed one-off tasks
// (deleteLeased: id, lease_until, next_send_at).
var (
	outboxColumnTypes  = columnTypes{"text", "text", "text", "text", "bigint", "bigint", "bytea", "bigint", "bigint"}
	eventColumnTypes   = columnTypes{"bigint", "text", "text", "text", "text", "text", "bigint"}
	attemptColumnTypes = columnTypes{"bigint", "text", "text", "bigint", "text", "bigint", "bigint", "text", "bigint", "text"}
	fenceColumnTypes   = columnTypes{"bigint", "bigint", "bigint"}

	upsertOutboxArraysSQL = upsertOutboxInto + `
	` + outboxColumnTypes.unnest() + upsertOutboxTail
	// The rows carry no outbox_id (events_rows.go).
	insertEventArraysSQL = `INSERT INTO message_events (at, user_id, message_id, device_id, type, detail, queued_at) ` +
		eventColumnTypes.unnest()
	insertAttemptArraysSQL = `INSERT INTO delivery_log
		(at, message_id, user_id, device_id, push_host, try, status, outcome, latency_ms, error) ` +
		attemptColumnTypes.unnest()
	// The ids first, so that the primary key finds the rows before the
	// fences are checked.
	deleteLeasedArraysSQL = `DELETE FROM tasks WHERE id = ANY(?::bigint[])
	AND (id, lease_until, next_send_at) IN (` + fenceColumnTypes.unnest() + `) RETURNING id`
)
