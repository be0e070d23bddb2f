package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Interrupts: approvals an agent loop waits for (issue 21). A row is born
// pending and leaves that state exactly once, by a decision or by its
// expiry, each a fenced UPDATE … WHERE state = 'pending' … RETURNING: of a
// decision and the expiry that race, or of two decisions, exactly one
// statement changes the row, on either backend, and only its caller
// resumes the loop.

// InterruptState is where an interrupt stands.
type InterruptState string

// Interrupt states.
const (
	InterruptPending  InterruptState = "pending"
	InterruptApproved InterruptState = "approved"
	InterruptDenied   InterruptState = "denied"
	InterruptExpired  InterruptState = "expired"
)

// Errors of DecideInterrupt.
var (
	ErrInterruptNotFound = errors.New("store: interrupt not found")
	ErrInterruptDecided  = errors.New("store: interrupt already decided")
	ErrInterruptExpired  = errors.New("store: interrupt expired")
)

// Interrupt is one approval a loop waits for.
type Interrupt struct {
	ID         string
	UserID     string
	SessionID  string
	Iteration  int // of the round whose tool call it holds
	ToolCallID string
	// Body is the loop's: the tool call and what resuming needs. Sealed
	// at rest with the user's key.
	Body      json.RawMessage
	State     InterruptState
	Reason    string // the person's, on a denial; sealed at rest
	DecidedBy int64  // the deciding device's id, 0 when unknown
	CreatedAt time.Time
	ExpiresAt time.Time
	DecidedAt time.Time // zero while pending
}

const interruptColumns = `id, user_id, session_id, iteration, tool_call_id, body, state, reason, decided_by,
	created_at, expires_at, decided_at`

// CreateInterrupts records pending interrupts, all in one write.
func (s *Store) CreateInterrupts(ctx context.Context, in []Interrupt) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, i := range in {
			if _, err := tx.ExecContext(ctx, `INSERT INTO interrupts (id, user_id, session_id, iteration, tool_call_id,
					body, state, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
				i.ID, i.UserID, i.SessionID, i.Iteration, i.ToolCallID, s.userKey(i.UserID).SealAtRest(i.Body),
				millis(i.CreatedAt), millis(i.ExpiresAt)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: create interrupts: %w", err)
	}
	return nil
}

// InterruptDecision is one DecideInterrupt call.
type InterruptDecision struct {
	ID        string
	State     InterruptState // InterruptApproved or InterruptDenied
	Reason    string
	DecidedBy int64
	At        time.Time // the decision's time; an interrupt expiring at or before it is expired
}

// DecideInterrupt moves a pending interrupt that has not expired at d.At
// to d.State and returns it. Otherwise nothing changes and the error says
// why: ErrInterruptNotFound, ErrInterruptExpired (expired, whether or not
// the expiry has been recorded yet) or ErrInterruptDecided.
func (s *Store) DecideInterrupt(ctx context.Context, d InterruptDecision) (*Interrupt, error) {
	if d.State != InterruptApproved && d.State != InterruptDenied {
		return nil, fmt.Errorf("store: decide interrupt: state %q is no decision", d.State)
	}
	var out *Interrupt
	err := s.write(ctx, func(tx *sql.Tx) error {
		var reason any // NULL without one
		if d.Reason != "" {
			userID, err := interruptUser(ctx, tx, d.ID)
			if err != nil {
				return err
			}
			reason = s.userKey(userID).SealAtRest([]byte(d.Reason))
		}
		rows, err := tx.QueryContext(ctx, `UPDATE interrupts SET state = ?, reason = ?, decided_by = ?, decided_at = ?
			WHERE id = ? AND state = 'pending' AND expires_at > ?
			RETURNING `+interruptColumns, string(d.State), reason, nullID(d.DecidedBy), millis(d.At), d.ID, millis(d.At))
		if err != nil {
			return err
		}
		list, err := s.scanInterrupts(rows)
		if err != nil {
			return err
		}
		if len(list) == 1 {
			out = &list[0]
			return s.recordInterruptsDecided(ctx, tx, list)
		}
		var state string
		err = tx.QueryRowContext(ctx, `SELECT state FROM interrupts WHERE id = ?`, d.ID).Scan(&state)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return ErrInterruptNotFound
		case err != nil:
			return err
		case state == string(InterruptPending) || state == string(InterruptExpired):
			return ErrInterruptExpired
		}
		return ErrInterruptDecided
	})
	if errors.Is(err, ErrInterruptNotFound) || errors.Is(err, ErrInterruptExpired) || errors.Is(err, ErrInterruptDecided) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("store: decide interrupt: %w", err)
	}
	return out, nil
}

func interruptUser(ctx context.Context, tx *sql.Tx, id string) (string, error) {
	var userID string
	err := tx.QueryRowContext(ctx, `SELECT user_id FROM interrupts WHERE id = ?`, id).Scan(&userID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrInterruptNotFound
	}
	return userID, err
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// ExpireInterrupts moves up to limit pending interrupts that expired at or
// before now to expired and returns them, earliest first. Instances that
// call it at once get disjoint sets.
func (s *Store) ExpireInterrupts(ctx context.Context, now time.Time, limit int) ([]Interrupt, error) {
	var out []Interrupt
	err := s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `UPDATE interrupts SET state = 'expired', decided_at = ?
			WHERE id IN (SELECT id FROM interrupts WHERE state = 'pending' AND expires_at <= ?
				ORDER BY expires_at, id LIMIT ?)
			AND state = 'pending'
			RETURNING `+interruptColumns, millis(now), millis(now), limit)
		if err != nil {
			return err
		}
		if out, err = s.scanInterrupts(rows); err != nil {
			return err
		}
		return s.recordInterruptsDecided(ctx, tx, out)
	})
	if err != nil {
		return nil, fmt.Errorf("store: expire interrupts: %w", err)
	}
	sortByExpiry(out)
	return out, nil
}

// UnresumedInterrupts returns up to limit interrupts settled at or before
// settledBefore whose round was never marked resumed (MarkRoundResumed),
// the earliest settled first: the approvals whose instance stopped or died
// between the decision and the loop's next round.
func (s *Store) UnresumedInterrupts(ctx context.Context, settledBefore time.Time, limit int) ([]Interrupt, error) {
	rows, err := s.readQuery(ctx, `SELECT `+interruptColumns+` FROM interrupts
		WHERE state <> 'pending' AND resumed_at IS NULL AND decided_at <= ? ORDER BY decided_at, id LIMIT ?`,
		millis(settledBefore), limit)
	if err != nil {
		return nil, fmt.Errorf("store: unresumed interrupts: %w", err)
	}
	list, err := s.scanInterrupts(rows)
	if err != nil {
		return nil, fmt.Errorf("store: unresumed interrupts: %w", err)
	}
	return list, nil
}

// MarkRoundResumed records that the loop the settled interrupts of one
// round of a user's session paused has been followed: resumed, or found
// with nothing to resume. Its pending interrupts stay unmarked: the last of
// them to settle resumes the round.
func (s *Store) MarkRoundResumed(ctx context.Context, userID, sessionID string, iteration int, at time.Time) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE interrupts SET resumed_at = ?
			WHERE user_id = ? AND session_id = ? AND iteration = ? AND state <> 'pending' AND resumed_at IS NULL`,
			millis(at), userID, sessionID, iteration)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: mark round resumed: %w", err)
	}
	return nil
}

// NextInterruptExpiry is when the earliest pending interrupt expires; zero
// when none is pending.
func (s *Store) NextInterruptExpiry(ctx context.Context) (time.Time, error) {
	var next sql.NullInt64
	if err := s.readRow(ctx, `SELECT min(expires_at) FROM interrupts WHERE state = 'pending'`).Scan(&next); err != nil {
		return time.Time{}, fmt.Errorf("store: next interrupt expiry: %w", err)
	}
	if !next.Valid {
		return time.Time{}, nil
	}
	return fromMillis(next.Int64), nil
}

// Interrupt returns one interrupt by id.
func (s *Store) Interrupt(ctx context.Context, id string) (*Interrupt, error) {
	rows, err := s.readQuery(ctx, `SELECT `+interruptColumns+` FROM interrupts WHERE id = ?`, id)
	if err != nil {
		return nil, fmt.Errorf("store: interrupt: %w", err)
	}
	list, err := s.scanInterrupts(rows)
	switch {
	case err != nil:
		return nil, fmt.Errorf("store: interrupt: %w", err)
	case len(list) == 0:
		return nil, ErrInterruptNotFound
	}
	return &list[0], nil
}

// RoundInterrupts returns the interrupts of one round of a user's session,
// in the order they were created.
func (s *Store) RoundInterrupts(ctx context.Context, userID, sessionID string, iteration int) ([]Interrupt, error) {
	rows, err := s.readQuery(ctx, `SELECT `+interruptColumns+` FROM interrupts
		WHERE user_id = ? AND session_id = ? AND iteration = ? ORDER BY created_at, id`, userID, sessionID, iteration)
	if err != nil {
		return nil, fmt.Errorf("store: round interrupts: %w", err)
	}
	list, err := s.scanInterrupts(rows)
	if err != nil {
		return nil, fmt.Errorf("store: round interrupts: %w", err)
	}
	return list, nil
}

// PendingInterrupts returns up to limit of the user's interrupts pending
// and not expired at now, the soonest to expire first.
func (s *Store) PendingInterrupts(ctx context.Context, userID string, now time.Time, limit int) ([]Interrupt, error) {
	rows, err := s.readQuery(ctx, `SELECT `+interruptColumns+` FROM interrupts
		WHERE user_id = ? AND state = 'pending' AND expires_at > ? ORDER BY expires_at, id LIMIT ?`, userID, millis(now), limit)
	if err != nil {
		return nil, fmt.Errorf("store: pending interrupts: %w", err)
	}
	list, err := s.scanInterrupts(rows)
	if err != nil {
		return nil, fmt.Errorf("store: pending interrupts: %w", err)
	}
	return list, nil
}

// PruneInterrupts deletes the interrupts decided or expired before cutoff.
func (s *Store) PruneInterrupts(ctx context.Context, cutoff time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM interrupts WHERE state <> 'pending' AND decided_at < ?`, millis(cutoff))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: prune interrupts: %w", err)
	}
	return int(n), nil
}

// scanInterrupts reads rows of interruptColumns to the end, opening the
// sealed columns.
func (s *Store) scanInterrupts(rows *sql.Rows) ([]Interrupt, error) {
	defer rows.Close()
	var out []Interrupt
	for rows.Next() {
		var i Interrupt
		var body, state string
		var reason sql.NullString
		var decidedBy, decidedAt sql.NullInt64
		var created, expires int64
		if err := rows.Scan(&i.ID, &i.UserID, &i.SessionID, &i.Iteration, &i.ToolCallID, &body, &state, &reason,
			&decidedBy, &created, &expires, &decidedAt); err != nil {
			return nil, err
		}
		key := s.userKey(i.UserID)
		raw, err := key.OpenAtRest(body)
		if err != nil {
			return nil, fmt.Errorf("interrupt %s: %w", i.ID, err)
		}
		i.Body = raw
		if reason.Valid {
			text, err := key.OpenAtRest(reason.String)
			if err != nil {
				return nil, fmt.Errorf("interrupt %s reason: %w", i.ID, err)
			}
			i.Reason = string(text)
		}
		i.State, i.DecidedBy = InterruptState(state), decidedBy.Int64
		i.CreatedAt, i.ExpiresAt = fromMillis(created), fromMillis(expires)
		if decidedAt.Valid {
			i.DecidedAt = fromMillis(decidedAt.Int64)
		}
		out = append(out, i)
	}
	return out, rows.Err()
}

// sortByExpiry orders interrupts by expiry, then id: RETURNING keeps no
// order.
func sortByExpiry(list []Interrupt) {
	slices.SortFunc(list, func(a, b Interrupt) int {
		return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt), strings.Compare(a.ID, b.ID))
	})
}
