package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"amsg/push"
	"amsg/store/usercrypt"
)

// The user's cloud data is everything amsg holds for a user, seen as
// resources the user can list and delete (upstream's cloud-data
// management). Apps say who a resource belongs to in their own terms, an
// owner {type, id, label} such as a character, when they write a task,
// a client-state value or a credential; the owner and the app's kind are
// kept sealed in cloud_owned beside the resource. Retiring an owner
// deletes what it owns and fences its generation: a write still carrying
// the old generation (a late request, another device) is refused in the
// transaction that would have written it. Restoring the owner starts a new
// generation, which writers must then send. An owner never retired nor
// restored has no row and is active at generation 0.

// Bounds of owners, upstream's.
const (
	MaxOwnerTypeLen = 100
	MaxOwnerIDLen   = 300
	MaxOwnerLabel   = 300
	MaxOwnerKindLen = 100
)

// Errors of the owner guard.
var (
	// ErrInvalidOwner: an owner's type or id is blank or too long.
	ErrInvalidOwner = errors.New("store: invalid cloud owner")
	// ErrOwnerRetired: the write names an owner that is retired, or a
	// generation other than the owner's current one.
	ErrOwnerRetired = errors.New("store: cloud owner is retired or its generation changed")
	// ErrOwnerImmutable: the write names another owner than the one the
	// resource has.
	ErrOwnerImmutable = errors.New("store: a resource's owner cannot be changed by an ordinary write")
)

// Owner is who a resource belongs to in the app.
type Owner struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Label string `json:"label,omitempty"`
}

// CheckOwner applies upstream's owner rule: type 1-100 and id 1-300
// characters (UTF-16 code units), neither blank, and a label of at most
// MaxOwnerLabel.
func CheckOwner(o Owner) error {
	switch {
	case push.IsJSBlank(o.Type) || push.JSLength(o.Type) > MaxOwnerTypeLen:
		return fmt.Errorf("%w: type must be 1-%d characters", ErrInvalidOwner, MaxOwnerTypeLen)
	case push.IsJSBlank(o.ID) || push.JSLength(o.ID) > MaxOwnerIDLen:
		return fmt.Errorf("%w: id must be 1-%d characters", ErrInvalidOwner, MaxOwnerIDLen)
	case push.JSLength(o.Label) > MaxOwnerLabel:
		return fmt.Errorf("%w: label must be at most %d characters", ErrInvalidOwner, MaxOwnerLabel)
	}
	return nil
}

func (o Owner) same(p Owner) bool { return o.Type == p.Type && o.ID == p.ID }

// OwnerClaim is what a write says about the resource it writes: its owner
// (nil: the one it has, if any), the app's kind of resource, and the owner
// generation the writer knows (0 when it sent none, never "the current
// one": a restore must not revive old writers).
// A resource's ownership record is the claim that wrote it, sealed.
type OwnerClaim struct {
	Owner      *Owner `json:"owner"`
	Kind       string `json:"kind,omitempty"`
	Generation int64  `json:"generation"`
}

// OwnerState is where an owner stands.
type OwnerState struct {
	Owner      Owner
	Retired    bool
	Generation int64
	// UpdatedAt is the last retirement or restore; zero for an owner never
	// retired.
	UpdatedAt time.Time
}

// ownerKey is the owner's identity in the tables: a hash keyed by the
// user's key, so the database holds no owner id in clear.
func ownerKey(key usercrypt.Key, o Owner) string {
	mac := hmac.New(sha256.New, []byte(key.Hex()))
	mac.Write([]byte(o.Type + "\x00" + o.ID))
	return hex.EncodeToString(mac.Sum(nil))
}

// claimOwnership applies claim to the resource (typ, ref) of userID inside
// the write tx that writes the resource, so that no retirement can come in
// between: an existing resource keeps the owner it has (ErrOwnerImmutable
// for another), and a write for an owner is refused unless claim's
// generation is the owner's current one and the owner is active
// (ErrOwnerRetired). The ownership record of a resource that no longer
// exists (deleted by an ordinary route) is ignored and replaced.
func (s *Store) claimOwnership(ctx context.Context, tx *sql.Tx, key usercrypt.Key, userID, typ, ref string, claim *OwnerClaim, exists bool) error {
	var c OwnerClaim
	if claim != nil {
		c = *claim
	}
	if !exists && claim == nil {
		_, err := tx.ExecContext(ctx, `DELETE FROM cloud_owned WHERE user_id = ? AND type = ? AND ref = ?`, userID, typ, ref)
		return err
	}
	var sealed string
	err := tx.QueryRowContext(ctx, `SELECT meta FROM cloud_owned WHERE user_id = ? AND type = ? AND ref = ?`, userID, typ, ref).Scan(&sealed)
	switch {
	case !exists || errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	default:
		var prev OwnerClaim
		if plaintext, err := key.OpenAtRest(sealed); err == nil && json.Unmarshal(plaintext, &prev) == nil {
			if prev.Owner != nil && c.Owner != nil && !prev.Owner.same(*c.Owner) {
				return ErrOwnerImmutable
			}
			if c.Owner == nil {
				c.Owner = prev.Owner
			}
			if c.Kind == "" {
				c.Kind = prev.Kind
			}
		}
	}
	if c.Owner == nil && c.Kind == "" {
		return nil
	}
	ownerK := ""
	if c.Owner != nil {
		ownerK = ownerKey(key, *c.Owner)
		state, err := s.ownerRow(ctx, tx, key, userID, ownerK)
		if err != nil {
			return err
		}
		if state.Retired || state.Generation != c.Generation {
			return ErrOwnerRetired
		}
	}
	meta, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO cloud_owned (user_id, type, ref, owner_key, meta, updated_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (user_id, type, ref) DO UPDATE SET owner_key = excluded.owner_key, meta = excluded.meta, updated_at = excluded.updated_at`,
		userID, typ, ref, ownerK, key.SealAtRest(meta), millis(s.now()))
	return err
}

// ownerRow reads an owner's state; an owner without a row is active at
// generation 0.
func (s *Store) ownerRow(ctx context.Context, q querier, key usercrypt.Key, userID, ownerK string) (OwnerState, error) {
	var sealed string
	var active, generation, updatedAt int64
	err := q.QueryRowContext(ctx, `SELECT owner, active, generation, updated_at FROM cloud_owners WHERE user_id = ? AND owner_key = ?`,
		userID, ownerK).Scan(&sealed, &active, &generation, &updatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return OwnerState{}, nil
	}
	if err != nil {
		return OwnerState{}, err
	}
	var o Owner
	if plaintext, err := key.OpenAtRest(sealed); err == nil {
		_ = json.Unmarshal(plaintext, &o)
	}
	return OwnerState{Owner: o, Retired: active == 0, Generation: generation, UpdatedAt: fromMillis(updatedAt)}, nil
}

// querier is what a transaction and a pool have in common for reads.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// setOwnerActive retires (active false) or restores an owner, moving it to
// the next generation; restoring an active owner changes nothing.
func (s *Store) setOwnerActive(ctx context.Context, tx *sql.Tx, key usercrypt.Key, userID string, o Owner, active bool) (OwnerState, error) {
	ownerK := ownerKey(key, o)
	state, err := s.ownerRow(ctx, tx, key, userID, ownerK)
	if err != nil {
		return OwnerState{}, err
	}
	if state.Retired != active { // already where it should be
		state.Owner = mergeLabel(state.Owner, o)
		return state, nil
	}
	sealedOwner, err := json.Marshal(mergeLabel(state.Owner, o))
	if err != nil {
		return OwnerState{}, err
	}
	now := s.now()
	flag := int64(0)
	if active {
		flag = 1
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO cloud_owners (user_id, owner_key, owner, active, generation, updated_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (user_id, owner_key) DO UPDATE SET owner = excluded.owner, active = excluded.active,
			generation = excluded.generation, updated_at = excluded.updated_at`,
		userID, ownerK, key.SealAtRest(sealedOwner), flag, state.Generation+1, millis(now))
	if err != nil {
		return OwnerState{}, err
	}
	return OwnerState{Owner: mergeLabel(state.Owner, o), Retired: !active, Generation: state.Generation + 1, UpdatedAt: fromMillis(millis(now))}, nil
}

// mergeLabel is o with the stored owner's label when o has none.
func mergeLabel(stored, o Owner) Owner {
	if o.Label == "" && stored.same(o) {
		o.Label = stored.Label
	}
	return o
}

// CloudOwner returns where userID's owner o stands.
func (s *Store) CloudOwner(ctx context.Context, userID string, o Owner) (OwnerState, error) {
	key := s.userKey(userID)
	state, err := s.ownerRow(ctx, s.reader, key, userID, ownerKey(key, o))
	if err != nil {
		return OwnerState{}, fmt.Errorf("store: cloud owner: %w", err)
	}
	state.Owner = mergeLabel(state.Owner, o)
	return state, nil
}

// CloudOwners returns every owner of userID that was retired or restored,
// in the order they last changed. An owner whose sealed name does not open
// is left out and counted in unreadable.
func (s *Store) CloudOwners(ctx context.Context, userID string) (owners []OwnerState, unreadable int, err error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT owner, active, generation, updated_at FROM cloud_owners
		WHERE user_id = ? ORDER BY updated_at, owner_key`, userID)
	if err != nil {
		return nil, 0, fmt.Errorf("store: cloud owners: %w", err)
	}
	defer rows.Close()
	key := s.userKey(userID)
	for rows.Next() {
		var sealed string
		var active, generation, updatedAt int64
		if err := rows.Scan(&sealed, &active, &generation, &updatedAt); err != nil {
			return nil, 0, fmt.Errorf("store: cloud owners: %w", err)
		}
		var o Owner
		plaintext, err := key.OpenAtRest(sealed)
		if err != nil || json.Unmarshal(plaintext, &o) != nil {
			unreadable++
			continue
		}
		owners = append(owners, OwnerState{Owner: o, Retired: active == 0, Generation: generation, UpdatedAt: fromMillis(updatedAt)})
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("store: cloud owners: %w", err)
	}
	return owners, unreadable, nil
}

// ErrCleanupInProgress: the owner has a retirement that has not finished;
// it cannot be restored until it has.
var ErrCleanupInProgress = errors.New("store: a cleanup of this owner is in progress")

// RestoreCloudOwner makes a retired owner active again at a new generation
// (an active owner is left as it is) and returns its state. An owner with
// an unfinished retirement is ErrCleanupInProgress.
func (s *Store) RestoreCloudOwner(ctx context.Context, userID string, o Owner) (OwnerState, error) {
	key := s.userKey(userID)
	var state OwnerState
	err := s.write(ctx, func(tx *sql.Tx) error {
		ops, _, err := s.readOperations(ctx, tx, key, userID)
		if err != nil {
			return err
		}
		for _, op := range ops {
			if op.Mode == ModeRetireOwner && op.Owner != nil && op.Owner.same(o) && !op.finished() {
				return ErrCleanupInProgress
			}
		}
		state, err = s.setOwnerActive(ctx, tx, key, userID, o, true)
		return err
	})
	if errors.Is(err, ErrCleanupInProgress) {
		return OwnerState{}, err
	}
	if err != nil {
		return OwnerState{}, fmt.Errorf("store: restore cloud owner: %w", err)
	}
	return state, nil
}

// stateRef is a client-state value's identity among the user's resources:
// control characters cannot occur in names, so the separator is unambiguous.
func stateRef(namespace, key string) string { return namespace + stateSep + key }

// splitStateRef undoes stateRef.
func splitStateRef(ref string) (namespace, key string) {
	namespace, key, _ = strings.Cut(ref, stateSep)
	return namespace, key
}
