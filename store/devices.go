package store

import (
	"amsg/push"
	"context"
	"fmt"
	"time"
)

// Liveness of devices. iOS revokes a subscription after a few pushes that
// showed nothing, and Apple's push service still answers 2xx for it, so a
// dead device is never pruned by a 404/410. A device is therefore seen when
// the page opens on it and whenever its service worker reports a push it
// received; one silent for longer than the configured limit is expired.
//
// last_seen_at is NULL until the first report: liveness is the latest of
// created_at, updated_at (every PUT /push-subscription, which upstream's
// client sends on each start) and last_seen_at, so clients that never report
// still count as seen when they register again.

// livenessSQL is a device's last sign of life in milliseconds.
func (s *Store) livenessSQL() string {
	return s.dialect.Greatest + `(created_at, updated_at, coalesce(last_seen_at, 0))`
}

// DeviceSeen is one of a user's devices as the device list shows it.
type DeviceSeen struct {
	ID         int64
	Endpoint   string
	CreatedAt  time.Time
	UpdatedAt  time.Time
	LastSeenAt time.Time // the latest of CreatedAt, UpdatedAt and its reports
}

// SeeDevice records that userID's device with this endpoint is alive now and
// reports whether the user has such a device.
func (s *Store) SeeDevice(ctx context.Context, userID, endpoint string) (bool, error) {
	n, err := s.execCount(ctx, "see device", `UPDATE subscriptions SET last_seen_at = ? WHERE user_id = ? AND endpoint_sha256 = ?`,
		millis(s.now()), userID, endpointHash(endpoint))
	return n > 0, err
}

// DevicesSeen returns userID's devices with their last sign of life, most
// recently updated first. Rows that do not decrypt are left out, as Devices
// does.
func (s *Store) DevicesSeen(ctx context.Context, userID string) ([]DeviceSeen, error) {
	devices, err := s.Devices(ctx, userID)
	if err != nil || len(devices) == 0 {
		return nil, err
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT id, `+s.livenessSQL()+` FROM subscriptions WHERE user_id = ?`, userID)
	if err != nil {
		return nil, fmt.Errorf("store: devices seen: %w", err)
	}
	defer rows.Close()
	seen := make(map[int64]int64, len(devices))
	for rows.Next() {
		var id, at int64
		if err := rows.Scan(&id, &at); err != nil {
			return nil, fmt.Errorf("store: devices seen: %w", err)
		}
		seen[id] = at
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: devices seen: %w", err)
	}
	out := make([]DeviceSeen, 0, len(devices))
	for _, d := range devices {
		at, ok := seen[d.ID]
		if !ok {
			continue // deleted between the two reads
		}
		out = append(out, DeviceSeen{ID: d.ID, Endpoint: d.Subscription.Endpoint, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, LastSeenAt: fromMillis(at)})
	}
	return out, nil
}

// Bounds of PruneUnknownSubscriptions: a device goes once its push service
// has said UnknownSubscriptionFailures times in a row, the first and the
// last at least UnknownSubscriptionSpan apart, that it does not know the
// subscription. Only attempts of the last UnknownSubscriptionWindow count.
const (
	UnknownSubscriptionFailures = 3
	UnknownSubscriptionSpan     = time.Hour
	UnknownSubscriptionWindow   = 7 * 24 * time.Hour
)

// PruneUnknownSubscriptions deletes the devices whose push service keeps
// answering that it does not know the subscription (a 400 naming it,
// push.OutcomeUnknownSubscription, which deletes nothing by itself): those
// with UnknownSubscriptionFailures such attempts since their last delivered
// one, spread over UnknownSubscriptionSpan, in the window before now.
func (s *Store) PruneUnknownSubscriptions(ctx context.Context, now time.Time) (int, error) {
	since := millis(now.Add(-UnknownSubscriptionWindow))
	// The attempts that count lie in the window's range (timeorder.go),
	// and so do the delivered ones after them.
	r, err := s.rowsSince(ctx, s.reader, attemptsByTime, since)
	if err != nil {
		return 0, fmt.Errorf("store: prune unknown subscriptions: %w", err)
	}
	args := append(r.args(), string(push.OutcomeUnknownSubscription), since)
	args = append(append(args, r.args()...), string(push.OutcomeDelivered), UnknownSubscriptionFailures, UnknownSubscriptionSpan.Milliseconds())
	n, err := s.execCount(ctx, "prune unknown subscriptions", unknownSubscriptionsSQL(r), args...)
	if n > 0 {
		s.log.Info("store: deleted devices their push service does not know", "deleted", n)
	}
	return n, err
}

// unknownSubscriptionsSQL deletes PruneUnknownSubscriptions' devices, from
// their attempts in r.
func unknownSubscriptionsSQL(r rowRange) string {
	return `DELETE FROM subscriptions WHERE id IN (
		SELECT u.device_id FROM delivery_log u
		WHERE ` + r.where("u") + `u.outcome = ? AND u.at >= ? AND NOT EXISTS (
			SELECT 1 FROM delivery_log d WHERE ` + r.where("d") + `d.device_id = u.device_id AND d.outcome = ? AND d.at >= u.at)
		GROUP BY u.device_id
		HAVING count(*) >= ? AND max(u.at) - min(u.at) >= ?)`
}

// ExpireSilentDevices deletes every device whose last sign of life is before
// cutoff and returns how many there were. Housekeeping calls it with now
// minus the configured silence limit.
func (s *Store) ExpireSilentDevices(ctx context.Context, cutoff time.Time) (int, error) {
	n, err := s.execCount(ctx, "expire silent devices", `DELETE FROM subscriptions WHERE `+s.livenessSQL()+` < ?`, millis(cutoff))
	if n > 0 {
		s.log.Info("store: expired silent devices", "expired", n, "silentSince", cutoff.UTC().Format(time.RFC3339))
	}
	return n, err
}
