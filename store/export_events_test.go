package store

import "context"

// MessageEventRows counts the rows of message_events, for the tests of
// how many a delivery's events take.
func (s *Store) MessageEventRows(ctx context.Context) (int, error) {
	var n int
	err := s.reader.QueryRowContext(ctx, `SELECT count(*) FROM message_events`).Scan(&n)
	return n, err
}
