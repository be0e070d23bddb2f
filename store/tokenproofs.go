package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// A token proof records that a user last authenticated with the client
// token whose MAC it holds, and when: amsg-client's encrypted /instant and
// /continue carry no X-Client-Token, and are honoured only for a user whose
// proof matches the current token (api/auth.go). One row per user in
// client_token_proofs.

// TokenProof is a user's last proof of the client token.
type TokenProof struct {
	TokenMAC string
	SeenAt   time.Time
}

// PutTokenProof records a user's proof.
func (s *Store) PutTokenProof(ctx context.Context, userID string, p TokenProof) error {
	_, err := s.writer.ExecContext(ctx, `INSERT INTO client_token_proofs (user_id, token_mac, seen_at) VALUES (?, ?, ?)
		ON CONFLICT (user_id) DO UPDATE SET token_mac = excluded.token_mac, seen_at = excluded.seen_at`,
		userID, p.TokenMAC, millis(p.SeenAt))
	if err != nil {
		return fmt.Errorf("store: token proof: %w", err)
	}
	return nil
}

// TokenProof returns a user's proof; ok is false when there is none.
func (s *Store) TokenProof(ctx context.Context, userID string) (p TokenProof, ok bool, err error) {
	var seen int64
	err = s.reader.QueryRowContext(ctx, `SELECT token_mac, seen_at FROM client_token_proofs WHERE user_id = ?`, userID).
		Scan(&p.TokenMAC, &seen)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return p, false, nil
	case err != nil:
		return p, false, fmt.Errorf("store: token proof: %w", err)
	}
	p.SeenAt = fromMillis(seen)
	return p, true, nil
}

// PruneTokenProofs deletes the proofs last renewed before cutoff: they let
// nothing in any more (api/tokenproof.go), and a token holder naming fresh
// ids must not grow the table for good.
func (s *Store) PruneTokenProofs(ctx context.Context, cutoff time.Time) (int, error) {
	res, err := s.writer.ExecContext(ctx, `DELETE FROM client_token_proofs WHERE seen_at < ?`, millis(cutoff))
	if err != nil {
		return 0, fmt.Errorf("store: prune token proofs: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store: prune token proofs: %w", err)
	}
	return int(n), nil
}
