package store

import (
	"bytes"
	"database/sql"
	"testing"

	"amsg/store/driver/pgarray"
)

// PostgreSQL's batches bind the outbox's sealed payloads as one bytea
// array: a column typed otherwise fails the batch, which the group commit
// then runs one write at a time (a commit a push).
func TestOutboxBatchBindsThePayloadsAsBytes(t *testing.T) {
	var args []any
	for i, sealed := range [][]byte{{1, 2}, {3}} {
		m := OutboxMessage{MessageID: string(rune('a' + i))}
		args = append(args, upsertOutboxArgs("alice", m, sealed, 1, sql.NullInt64{})...)
	}
	columns, err := outboxColumnTypes.arrays(args)
	if err != nil {
		t.Fatal(err)
	}
	payloads, ok := columns[6].(pgarray.Array[pgarray.Bytea])
	if !ok || len(payloads) != 2 || !bytes.Equal(payloads[0], []byte{1, 2}) || !bytes.Equal(payloads[1], []byte{3}) {
		t.Errorf("payload column = %#v, want the two sealed payloads as bytes", columns[6])
	}
}
