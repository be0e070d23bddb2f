package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Idempotency keys let a client that retries a request create one thing:
// the first request with a key claims it (scope, key) and stores its answer;
// a later one with the same request reads that answer back. Rows live
// IdempotencyKeyTTL, in the database, so they survive a restart and are
// shared by the instances on one PostgreSQL database.

// Bounds of idempotency keys.
const (
	// IdempotencyKeyTTL is how long a key's answer is replayed.
	IdempotencyKeyTTL = 24 * time.Hour
	// IdempotencyInFlightTTL is how long a claim without an answer holds
	// the key: past it, the process that claimed it is taken for dead and
	// the next request with the key runs afresh. Longer than any request.
	IdempotencyInFlightTTL = 5 * time.Minute
)

// IdempotencyClaim is what ClaimIdempotencyKey found.
type IdempotencyClaim int

// Claims.
const (
	// IdempotencyFresh: the key is the caller's; run the request, then
	// SaveIdempotentResponse or ReleaseIdempotencyKey.
	IdempotencyFresh IdempotencyClaim = iota
	// IdempotencyReplay: the same request was answered; Response holds it.
	IdempotencyReplay
	// IdempotencyMismatch: the key was used for another request.
	IdempotencyMismatch
	// IdempotencyInFlight: the same request is running now.
	IdempotencyInFlight
)

// IdempotentResponse is a stored answer.
type IdempotentResponse struct {
	Status int
	Body   []byte
}

// ClaimIdempotencyKey claims key in scope for the request whose hash is
// requestHash, unless a request claimed it within IdempotencyKeyTTL: then it
// reports the stored answer of the same request, that the request is still
// running, or that the key belongs to another request.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, scope, key, requestHash string) (IdempotencyClaim, IdempotentResponse, error) {
	claim, resp := IdempotencyFresh, IdempotentResponse{}
	err := s.write(ctx, func(tx *sql.Tx) error {
		claim, resp = IdempotencyFresh, IdempotentResponse{}
		now := s.now()
		var hash string
		var status sql.NullInt64
		var body sql.NullString
		var created int64
		err := tx.QueryRowContext(ctx, `SELECT request_hash, status, body, created_at FROM idempotency_keys WHERE scope = ? AND key = ?`,
			scope, key).Scan(&hash, &status, &body, &created)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.ExecContext(ctx, `INSERT INTO idempotency_keys (scope, key, request_hash, created_at) VALUES (?, ?, ?, ?)`,
				scope, key, requestHash, millis(now))
			return err
		case err != nil:
			return err
		}
		age := now.Sub(fromMillis(created))
		switch {
		case age >= IdempotencyKeyTTL, !status.Valid && age >= IdempotencyInFlightTTL:
			// Expired, or claimed by a process that died: the key is free.
			_, err = tx.ExecContext(ctx, `UPDATE idempotency_keys SET request_hash = ?, status = NULL, body = NULL, created_at = ?
				WHERE scope = ? AND key = ?`, requestHash, millis(now), scope, key)
			return err
		case hash != requestHash:
			claim = IdempotencyMismatch
		case !status.Valid:
			claim = IdempotencyInFlight
		default:
			claim, resp = IdempotencyReplay, IdempotentResponse{Status: int(status.Int64), Body: []byte(body.String)}
		}
		return nil
	})
	if err != nil {
		return 0, IdempotentResponse{}, fmt.Errorf("store: claim idempotency key: %w", err)
	}
	return claim, resp, nil
}

// SaveIdempotentResponse stores the answer of the request that claimed key.
func (s *Store) SaveIdempotentResponse(ctx context.Context, scope, key string, resp IdempotentResponse) error {
	_, err := s.execCount(ctx, "save idempotent response", `UPDATE idempotency_keys SET status = ?, body = ? WHERE scope = ? AND key = ?`,
		resp.Status, string(resp.Body), scope, key)
	return err
}

// ReleaseIdempotencyKey frees key, so the next request with it runs: the
// request that claimed it failed without an answer worth replaying.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, scope, key string) error {
	_, err := s.execCount(ctx, "release idempotency key", `DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND status IS NULL`, scope, key)
	return err
}

// PruneIdempotencyKeys deletes the keys claimed before cutoff.
func (s *Store) PruneIdempotencyKeys(ctx context.Context, cutoff time.Time) (int, error) {
	return s.execCount(ctx, "prune idempotency keys", `DELETE FROM idempotency_keys WHERE created_at < ?`, millis(cutoff))
}
