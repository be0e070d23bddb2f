package store

import (
	"context"
	"database/sql"

	"amsg/push"
)

// CompleteInOne completes the one-off tasks leases hold, each with its
// bookkeeping, in one write through completeInOne alone, for the test of
// the one statement: the ids it deleted, nil where it declined.
func (s *Store) CompleteInOne(ctx context.Context, leases []Lease, books []push.Bookkeeping) (map[int64]bool, error) {
	var cs []completion
	var attempts []push.Attempt
	var records [][]any
	var events []MessageEvent
	for i, l := range leases {
		w, err := s.prepareBookkeeping(books[i])
		if err != nil {
			return nil, err
		}
		cs = append(cs, completion{l: l, w: w})
		attempts, records, events = append(attempts, w.b.Attempts...), w.recordRows(records), append(events, w.events...)
	}
	var deleted map[int64]bool
	err := s.writeLocked(ctx, func(tx *sql.Tx) error {
		var err error
		deleted, err = s.completeInOne(ctx, tx, cs, attempts, records, events)
		return err
	})
	return deleted, err
}
