package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"amsg/push"
	"amsg/store/usercrypt"
)

// A user has devices: one row per push endpoint. The subscription JSON is
// sealed with the user key, so the endpoint is unique through its SHA-256.

// MaxSubscriptionBytes bounds the subscription JSON one device may store.
// Real ones are a few hundred bytes.
const MaxSubscriptionBytes = 8 << 10

// ErrInvalidSubscription reports subscription JSON the store cannot keep.
var ErrInvalidSubscription = errors.New("store: invalid push subscription")

// ErrEndpointTaken reports an endpoint another user holds with other keys:
// a device belongs to its subscription, so only the browser that holds the
// keys (the same keys sent again) may move it to another user.
var ErrEndpointTaken = errors.New("store: push endpoint is another user's device")

// SubscriptionSummary is what GET /push-subscription reports.
type SubscriptionSummary struct {
	Exists    bool
	Devices   int       // subscriptions that decrypt
	Endpoint  string    // of the most recently updated device; "" if none
	UpdatedAt time.Time // of the most recently updated device; zero if none
}

// PutSubscription stores subscription, a PushSubscription JSON object kept
// exactly as sent (unknown fields too), as a device of userID. The endpoint
// is the key: registering it again updates that device, and an endpoint
// another user registered moves to userID if it comes with the keys it was
// registered with, else ErrEndpointTaken. updatedAt is the client's time,
// zero for now. When the user then has more than Config.MaxDevicesPerUser
// devices, the least recently updated others are evicted. A device keeps
// the language it reported (PutDevice).
func (s *Store) PutSubscription(ctx context.Context, userID string, subscription json.RawMessage, updatedAt time.Time) (push.Device, error) {
	return s.PutDevice(ctx, userID, subscription, updatedAt, "")
}

// MaxLanguageBytes bounds a device's language tag (BCP 47 tags in use are a
// dozen bytes; RFC 5646 §4.4.1 asks for 35 at least).
const MaxLanguageBytes = 35

// PutDevice is PutSubscription with the language the device reported (a
// BCP 47 tag of at most MaxLanguageBytes); "" keeps the one it has.
func (s *Store) PutDevice(ctx context.Context, userID string, subscription json.RawMessage, updatedAt time.Time, language string) (push.Device, error) {
	if len(language) > MaxLanguageBytes {
		return push.Device{}, fmt.Errorf("%w: language of %d bytes, limit %d", ErrInvalidSubscription, len(language), MaxLanguageBytes)
	}
	if len(subscription) > MaxSubscriptionBytes {
		return push.Device{}, fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidSubscription, len(subscription), MaxSubscriptionBytes)
	}
	var sub push.Subscription
	if err := json.Unmarshal(subscription, &sub); err != nil {
		return push.Device{}, fmt.Errorf("%w: %w", ErrInvalidSubscription, err)
	}
	if strings.TrimSpace(sub.Endpoint) == "" {
		return push.Device{}, fmt.Errorf("%w: endpoint is missing", ErrInvalidSubscription)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, subscription); err != nil {
		return push.Device{}, fmt.Errorf("%w: %w", ErrInvalidSubscription, err)
	}
	now := s.now()
	if updatedAt.IsZero() {
		updatedAt = now
	}
	d := push.Device{UserID: userID, Subscription: sub, Language: language, UpdatedAt: fromMillis(millis(updatedAt))}
	sealed := s.userKey(userID).SealAtRest(compact.Bytes())
	var evicted int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := s.checkEndpointOwner(ctx, tx, userID, sub); err != nil {
			return err
		}
		var created int64
		err := tx.QueryRowContext(s.statementContext(ctx), `INSERT INTO subscriptions (user_id, endpoint_sha256, subscription, created_at, updated_at, language)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (endpoint_sha256) DO UPDATE SET
				created_at   = CASE WHEN subscriptions.user_id = excluded.user_id THEN subscriptions.created_at ELSE excluded.created_at END,
				user_id      = excluded.user_id,
				subscription = excluded.subscription,
				updated_at   = excluded.updated_at,
				language     = CASE WHEN excluded.language = '' THEN subscriptions.language ELSE excluded.language END
			RETURNING id, created_at, language`,
			userID, endpointHash(sub.Endpoint), sealed, millis(now), millis(updatedAt), language).Scan(&d.ID, &created, &d.Language)
		if err != nil {
			return err
		}
		d.CreatedAt = fromMillis(created)
		res, err := s.txExec(ctx, tx, `DELETE FROM subscriptions WHERE user_id = ? AND id <> ? AND id NOT IN (
				SELECT id FROM subscriptions WHERE user_id = ? AND id <> ? ORDER BY updated_at DESC, id DESC LIMIT ?)`,
			userID, d.ID, userID, d.ID, s.maxDevicesPerUser-1)
		if err != nil {
			return err
		}
		evicted, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return push.Device{}, fmt.Errorf("store: put subscription: %w", err)
	}
	if evicted > 0 {
		s.log.Info("store: evicted least recently updated subscriptions", "userId", userID, "evicted", evicted, "maxDevices", s.maxDevicesPerUser)
	}
	return d, nil
}

// checkEndpointOwner refuses sub for userID when its endpoint is another
// user's device registered with other keys (issue 22: user B registering
// user A's endpoint with B's keys took A's device). A row that no longer
// opens is dead and may be taken.
func (s *Store) checkEndpointOwner(ctx context.Context, tx *sql.Tx, userID string, sub push.Subscription) error {
	var owner, sealed string
	err := tx.QueryRowContext(s.statementContext(ctx), `SELECT user_id, subscription FROM subscriptions WHERE endpoint_sha256 = ?`,
		endpointHash(sub.Endpoint)).Scan(&owner, &sealed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	case owner == userID:
		return nil
	}
	var held push.Subscription
	plaintext, err := s.userKey(owner).OpenAtRest(sealed)
	if err != nil || json.Unmarshal(plaintext, &held) != nil {
		return nil
	}
	if sameKey(held.Keys.P256dh, sub.Keys.P256dh) && sameKey(held.Keys.Auth, sub.Keys.Auth) {
		return nil
	}
	return ErrEndpointTaken
}

// sameKey compares two base64url keys in constant time, padding ignored.
func sameKey(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(strings.TrimRight(a, "=")), []byte(strings.TrimRight(b, "="))) == 1
}

// devicesColumns are what Devices and DevicesOf read of a device, in the
// order scanDevices scans them.
const devicesColumns = `user_id, id, subscription, created_at, updated_at, language`

var devicesSQL = preparedRead(`SELECT ` + devicesColumns + `
	FROM subscriptions WHERE user_id = ? ORDER BY updated_at DESC, id DESC`)

// devicesOfSQL reads the devices of the users of a JSON array; it is
// prepared at Open.
func (s *Store) devicesOfSQL() string {
	return `SELECT ` + devicesColumns + ` FROM subscriptions WHERE user_id IN (` + s.dialect.InJSONArray + `)
		ORDER BY user_id, updated_at DESC, id DESC`
}

// Devices returns userID's subscriptions, most recently updated first. A row
// that does not decrypt (the master key changed) is skipped and logged.
func (s *Store) Devices(ctx context.Context, userID string) ([]push.Device, error) {
	rows, err := s.readQuery(ctx, devicesSQL, userID)
	if err != nil {
		return nil, fmt.Errorf("store: devices: %w", err)
	}
	var devices []push.Device
	if err := s.scanDevices(rows, func(d push.Device) { devices = append(devices, d) }); err != nil {
		return nil, fmt.Errorf("store: devices: %w", err)
	}
	return devices, nil
}

// MaxDevicesOfUsers bounds the users of one DevicesOf read.
const MaxDevicesOfUsers = 1000

// DevicesOf returns the devices of userIDs in one read, each user's as
// Devices returns them; a user without devices has no entry. The scheduler
// reads the users of a claim at once: on PostgreSQL each read is a
// statement on a pooled connection, and a burst's first round to each user
// read them one user at a time on as many connections (issue 24). At most
// MaxDevicesOfUsers users.
func (s *Store) DevicesOf(ctx context.Context, userIDs []string) (map[string][]push.Device, error) {
	if len(userIDs) > MaxDevicesOfUsers {
		return nil, fmt.Errorf("store: devices of %d users: at most %d at once", len(userIDs), MaxDevicesOfUsers)
	}
	out := make(map[string][]push.Device, len(userIDs))
	if len(userIDs) == 0 {
		return out, nil
	}
	users, err := json.Marshal(userIDs)
	if err != nil {
		return nil, fmt.Errorf("store: devices of users: %w", err)
	}
	rows, err := s.readQuery(ctx, s.devicesOfSQL(), string(users))
	if err != nil {
		return nil, fmt.Errorf("store: devices of users: %w", err)
	}
	if err := s.scanDevices(rows, func(d push.Device) { out[d.UserID] = append(out[d.UserID], d) }); err != nil {
		return nil, fmt.Errorf("store: devices of users: %w", err)
	}
	return out, nil
}

// scanDevices decrypts the rows of devicesColumns and passes each device
// to add, in the rows' order, and closes rows. A row that does not decrypt
// is skipped and logged.
func (s *Store) scanDevices(rows *sql.Rows, add func(push.Device)) error {
	defer rows.Close()
	var key usercrypt.Key
	keyOf, keyed := "", false
	for rows.Next() {
		var d push.Device
		var sealed string
		var created, updated int64
		if err := rows.Scan(&d.UserID, &d.ID, &sealed, &created, &updated, &d.Language); err != nil {
			return err
		}
		if !keyed || keyOf != d.UserID {
			key, keyOf, keyed = s.userKey(d.UserID), d.UserID, true
		}
		plaintext, err := key.OpenAtRest(sealed)
		if err == nil {
			err = json.Unmarshal(plaintext, &d.Subscription)
		}
		if err != nil {
			s.log.Warn("store: skipping a subscription that does not decrypt", "userId", d.UserID, "deviceId", d.ID, "err", err)
			continue
		}
		d.CreatedAt, d.UpdatedAt = fromMillis(created), fromMillis(updated)
		add(d)
	}
	return rows.Err()
}

// SubscriptionSummary reports userID's devices without their keys.
func (s *Store) SubscriptionSummary(ctx context.Context, userID string) (SubscriptionSummary, error) {
	devices, err := s.Devices(ctx, userID)
	if err != nil || len(devices) == 0 {
		return SubscriptionSummary{}, err
	}
	return SubscriptionSummary{
		Exists:    true,
		Devices:   len(devices),
		Endpoint:  devices[0].Subscription.Endpoint,
		UpdatedAt: devices[0].UpdatedAt,
	}, nil
}

// DeleteDevice deletes one of userID's devices. A device that is already
// gone, or belongs to another user, is not an error.
func (s *Store) DeleteDevice(ctx context.Context, userID string, deviceID int64) error {
	_, err := s.RemoveDevice(ctx, userID, deviceID)
	return err
}

// RemoveDevice deletes one of userID's devices by its id and reports
// whether there was one: the page removes a device it knows by id only,
// since GET /devices never hands endpoints out.
func (s *Store) RemoveDevice(ctx context.Context, userID string, deviceID int64) (bool, error) {
	n, err := s.execCount(ctx, "delete subscriptions", deleteDeviceSQL, userID, deviceID)
	return n > 0, err
}

var deleteDeviceSQL = preparedSQL(`DELETE FROM subscriptions WHERE user_id = ? AND id = ?`)

// DeleteSubscription deletes userID's device with this endpoint and reports
// whether there was one.
func (s *Store) DeleteSubscription(ctx context.Context, userID, endpoint string) (bool, error) {
	n, err := s.execCount(ctx, "delete subscriptions", `DELETE FROM subscriptions WHERE user_id = ? AND endpoint_sha256 = ?`, userID, endpointHash(endpoint))
	return n > 0, err
}

// DeleteSubscriptions deletes all of userID's devices and returns how many
// there were.
func (s *Store) DeleteSubscriptions(ctx context.Context, userID string) (int, error) {
	return s.execCount(ctx, "delete subscriptions", `DELETE FROM subscriptions WHERE user_id = ?`, userID)
}

func endpointHash(endpoint string) []byte {
	sum := sha256.Sum256([]byte(endpoint))
	return sum[:]
}
