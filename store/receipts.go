package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"amsg/push/receipt"
)

// Receipts are the events a device's service worker reports (shown,
// clicked, dismissed), each with the push's receipt token, which names the
// device it was sent to: the store finds that device's user, and records
// each report once.

// ErrUnknownDevice reports a device id or endpoint no stored device has
// (any more: a device a push service reported gone is deleted).
var ErrUnknownDevice = errors.New("store: unknown device")

// DeviceOwner returns the user of the stored device deviceID, or
// ErrUnknownDevice.
func (s *Store) DeviceOwner(ctx context.Context, deviceID int64) (string, error) {
	var userID string
	err := s.readRow(ctx, `SELECT user_id FROM subscriptions WHERE id = ?`, deviceID).Scan(&userID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrUnknownDevice
	}
	if err != nil {
		return "", fmt.Errorf("store: device owner: %w", err)
	}
	return userID, nil
}

// DeviceAt returns the id of the stored device whose push endpoint is
// endpoint, or ErrUnknownDevice.
func (s *Store) DeviceAt(ctx context.Context, endpoint string) (int64, error) {
	var id int64
	err := s.readRow(ctx, `SELECT id FROM subscriptions WHERE endpoint_sha256 = ?`, endpointHash(endpoint)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrUnknownDevice
	}
	if err != nil {
		return 0, fmt.Errorf("store: device at endpoint: %w", err)
	}
	return id, nil
}

// RecordReceipts appends, in one write, each event a device reported that
// is not recorded already (the same user, message, device and type), and
// says for each whether it was new: a report sent again, by a worker that
// did not hear the answer, counts once. Invalid events fail them all
// (ErrInvalidMessageEvent) and nothing is written.
func (s *Store) RecordReceipts(ctx context.Context, events []MessageEvent) ([]bool, error) {
	if err := checkMessageEvents(events); err != nil {
		return nil, fmt.Errorf("store: record receipts: %w", err)
	}
	var recorded []bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		now := s.now()
		recorded = make([]bool, len(events)) // a write may run more than once
		for i, e := range events {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM message_events
				WHERE user_id = ? AND message_id = ? AND device_id = ? AND type = ?`,
				e.UserID, e.MessageID, e.DeviceID, e.Type).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				continue
			}
			if err := s.insertMessageEvents(ctx, tx, events[i:i+1], now); err != nil {
				return err
			}
			recorded[i] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: record receipts: %w", err)
	}
	return recorded, nil
}

// DeviceIDString is how message events name a stored device.
func DeviceIDString(deviceID int64) string { return strconv.FormatInt(deviceID, 10) }

// ReceiptSigner mints and checks the receipt tokens of this database's
// pushes, under a key derived from the master key: every instance of a
// deployment, and every restart, agrees on them.
func (s *Store) ReceiptSigner() *receipt.Signer {
	return receipt.NewSigner(s.keyring.DerivedKey("receipts"))
}
