package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// The queries below let the API refuse a write that would take a user over
// a quota before anything of the request is written.

// pendingTasksSQL counts the (user, 'pending') range of tasks_user (an
// index-only scan).
var pendingTasksSQL = preparedRead(`SELECT count(*) FROM tasks WHERE user_id = ? AND status = 'pending'`)

// PendingTasks counts the user's tasks still to be delivered.
func (s *Store) PendingTasks(ctx context.Context, userID string) (int, error) {
	var n int
	if err := s.readRow(ctx, pendingTasksSQL, userID).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: pending tasks: %w", err)
	}
	return n, nil
}

// TaskUUIDTaken reports whether a task with uuid exists, so a request that
// InsertTask would refuse with ErrTaskUUIDConflict is refused before it
// writes anything else.
func (s *Store) TaskUUIDTaken(ctx context.Context, uuid string) (bool, error) {
	var one int
	err := s.reader.QueryRowContext(ctx, `SELECT 1 FROM tasks WHERE uuid = ?`, uuid).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("store: task uuid: %w", err)
	}
	return true, nil
}

// ClientStateUsage is what a user's client state takes in the database,
// sealed values and chunk rows included.
type ClientStateUsage struct {
	UserBytes      int64
	NamespaceBytes int64 // of the namespace asked for
	ReplacedBytes  int64 // of the keys asked for, in that namespace
}

// StateBytes is what a value of n bytes takes once sealed:
// hex(iv16):hex(tag16):hex(value), as SealAtRest writes it (a chunked
// value's slices add their own IV and tag, a rounding error at the quotas'
// scale).
func StateBytes(n int) int64 { return 2*int64(n) + 2*16 + 2*16 + 2 }

// ClientStateUsage measures the user's client state, of it the namespace,
// and of that the values stored under the keys in replacing (those a write
// is about to replace).
func (s *Store) ClientStateUsage(ctx context.Context, userID, namespace string, replacing []string) (ClientStateUsage, error) {
	var u ClientStateUsage
	tx, err := s.reader.BeginTx(ctx, nil)
	if err != nil {
		return u, fmt.Errorf("store: client state usage: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	chunks := stateChunkNSPfx + namespace
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(length(value)), 0),
		coalesce(sum(CASE WHEN namespace IN (?, ?) THEN length(value) END), 0)
		FROM client_state WHERE user_id = ?`, namespace, chunks, userID).Scan(&u.UserBytes, &u.NamespaceBytes); err != nil {
		return u, fmt.Errorf("store: client state usage: %w", err)
	}
	for _, key := range replacing {
		var n int64
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(length(value)), 0) FROM client_state
			WHERE user_id = ? AND (namespace = ? AND key = ? OR namespace = ? AND key > ? AND key < ?)`,
			userID, namespace, key, chunks, key+stateSep, key+stateSliceKeyStop).Scan(&n); err != nil {
			return u, fmt.Errorf("store: client state usage: %w", err)
		}
		u.ReplacedBytes += n
	}
	return u, nil
}
