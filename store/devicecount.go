package store

import (
	"context"
	"fmt"
)

// countDevicesSQL counts a user's subscriptions without reading them.
var countDevicesSQL = preparedRead(`SELECT count(*) FROM subscriptions WHERE user_id = ?`)

// CountDevices is how many devices userID has, counted by the database
// rather than by opening each subscription: for the handlers that only ask
// whether a user can be reached at all. Unlike Devices it counts a row that
// would not decrypt (the master key changed); the courier skips such a row
// when it sends.
func (s *Store) CountDevices(ctx context.Context, userID string) (int, error) {
	var n int
	if err := s.readRow(ctx, countDevicesSQL, userID).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count devices: %w", err)
	}
	return n, nil
}
