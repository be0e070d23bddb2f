package store

import (
	"context"
	"fmt"
)

// MessageEventRows counts the rows of message_events, for the tests of
// how many a delivery's events take.
func (s *Store) MessageEventRows(ctx context.Context) (int, error) {
	var n int
	err := s.reader.QueryRowContext(ctx, `SELECT count(*) FROM message_events`).Scan(&n)
	return n, err
}

// EventOutboxIDs are the outbox ids of the rows of userID's message
// messageID's events, in Seq order, 0 for none: for the tests of the
// events by outbox row.
func (s *Store) EventOutboxIDs(ctx context.Context, userID, messageID string) ([]int64, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT coalesce(outbox_id, 0) FROM message_events
		WHERE user_id = ? AND message_id = ? ORDER BY id`, userID, messageID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// EventReadsSQL are the reads and deletes of one message's or one user's
// events, for the test of their plans.
func EventReadsSQL() map[string]string {
	reads := map[string]string{
		"timeline":    `SELECT ` + eventColumns + ` FROM message_events ` + timelineSQL,
		"user events": `SELECT count(*) FROM (` + userEventsSQL(`type, queued_at`) + `) e`,
	}
	for i, q := range deleteUserEventsSQL {
		reads[fmt.Sprint("delete user events ", i)] = q
	}
	for i, q := range outboxEventsDeletes(`user_id = ? AND message_id = ?`) {
		reads[fmt.Sprint("delete outbox events ", i)] = q
	}
	return reads
}
