package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
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

// receiptTypes are the events a device reports, each recorded once per
// user, message and device: the message_events_receipt index covers them.
var receiptTypes = []string{EventShown, EventClicked, EventDismissed}

// insertReceiptSQL records a report unless it is recorded already. The
// unique index decides, so two instances given the same report at the same
// moment record it once: at READ COMMITTED the second waits for the first
// to commit and then inserts nothing. Its outbox_id is its message's
// outbox row's (events_rows.go).
var insertReceiptSQL = preparedSQL(`INSERT INTO message_events (at, user_id, message_id, device_id, type, detail, outbox_id)
	VALUES (?, ?, ?, ?, ?, ?, (SELECT id FROM message_outbox WHERE user_id = ? AND message_id = ?))
	ON CONFLICT (user_id, message_id, device_id, type) WHERE type IN ('shown', 'clicked', 'dismissed') DO NOTHING`)

// RecordReceipts appends, in one write, each event a device reported that
// is not recorded already (the same user, message, device and type), and
// says for each whether it was new: a report sent again, by a worker that
// did not hear the answer, counts once, also when two instances receive
// it at once. Invalid events, or events of another type than a receipt's,
// fail them all (ErrInvalidMessageEvent) and nothing is written.
func (s *Store) RecordReceipts(ctx context.Context, events []MessageEvent) ([]bool, error) {
	if err := checkReceipts(events); err != nil {
		return nil, fmt.Errorf("store: record receipts: %w", err)
	}
	var recorded []bool
	err := s.writeLocked(ctx, func(tx *sql.Tx) error {
		now := s.now()
		recorded = make([]bool, len(events)) // a write may run more than once
		for i, e := range events {
			at, detail := e.At, "{}"
			if at.IsZero() {
				at = now
			}
			if e.Detail != nil {
				detail = string(e.Detail)
			}
			res, err := s.txExec(ctx, tx, insertReceiptSQL, millis(at), e.UserID, e.MessageID, e.DeviceID, e.Type, detail, e.UserID, e.MessageID)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			recorded[i] = n == 1
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: record receipts: %w", err)
	}
	return recorded, nil
}

// checkReceipts checks events as message events that are receipts.
func checkReceipts(events []MessageEvent) error {
	if err := checkMessageEvents(events); err != nil {
		return err
	}
	for i, e := range events {
		if !slices.Contains(receiptTypes, e.Type) {
			return fmt.Errorf("%w: event %d: type %q is not a receipt's (shown, clicked, dismissed)", ErrInvalidMessageEvent, i, e.Type)
		}
	}
	return nil
}

// DeviceIDString is how message events name a stored device.
func DeviceIDString(deviceID int64) string { return strconv.FormatInt(deviceID, 10) }

// ReceiptSigner mints and checks the receipt tokens of this database's
// pushes, under a key derived from the master key: every instance of a
// deployment, and every restart, agrees on them.
func (s *Store) ReceiptSigner() *receipt.Signer {
	return receipt.NewSigner(s.keyring.DerivedKey("receipts"))
}
