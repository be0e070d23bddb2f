package store

import "strings"

// Where the driver binds a Go slice as an array (Dialect.ArrayParams:
// PostgreSQL), the delivery path's batches go in as one array per column,
// unnested: one statement text whatever a batch holds, so each pooled
// session parses it once and soon runs a cached plan, where a multi-row
// VALUES list is a statement of its own for every size, parsed and
// planned afresh on nearly every run (issue 24).

// unnestSelect is the SELECT of rows whose columns are the arguments, one
// array each of the SQL types given.
func unnestSelect(types ...string) string {
	return `SELECT * FROM unnest(?::` + strings.Join(types, `[], ?::`) + `[])`
}

// columnArrays turns args, the values of rows of width columns one row
// after the other, into one array per column, the arguments of
// unnestSelect.
func columnArrays(args []any, width int) []any {
	rows := len(args) / width
	columns := make([]any, width)
	for c := range columns {
		column := make([]any, rows)
		for r := range column {
			column[r] = args[r*width+c]
		}
		columns[c] = column
	}
	return columns
}

// insertEventArraysSQL and insertAttemptArraysSQL insert many message
// events and delivery attempts as column arrays, in the order
// insertMessageEvents and insertAttempts give their values.
var (
	insertEventArraysSQL = `INSERT INTO message_events (at, user_id, message_id, device_id, type, detail) ` +
		unnestSelect("bigint", "text", "text", "text", "text", "text")
	insertAttemptArraysSQL = `INSERT INTO delivery_log
		(at, message_id, user_id, device_id, push_host, try, status, outcome, latency_ms, error) ` +
		unnestSelect("bigint", "text", "text", "bigint", "text", "bigint", "bigint", "text", "bigint", "text")
)

// deleteLeasedArraysSQL is deleteLeased's statement with the ids, then the
// fences (id, lease_until, next_send_at), as column arrays: the ids let
// the primary key find the rows before the fences are checked.
var deleteLeasedArraysSQL = `DELETE FROM tasks WHERE id = ANY(?::bigint[])
	AND (id, lease_until, next_send_at) IN (` + unnestSelect("bigint", "bigint", "bigint") + `) RETURNING id`
