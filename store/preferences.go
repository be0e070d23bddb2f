package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// A user's preferences protect them from proactive messages: quiet hours,
// during which scheduled pushes, operator sends and broadcasts wait, and a
// daily limit of proactive pushes sent by Web Push. One row per user in
// user_preferences, absent until the user sets one; nothing in it is a
// secret, so nothing is sealed.

// Preferences are a user's settings. The zero value is no preference.
type Preferences struct {
	// TimeZone is an IANA zone name, "" for none (quiet hours and the day
	// of the daily limit are then UTC's).
	TimeZone string
	// QuietHours is nil for none.
	QuietHours *QuietHours
	// DailyLimit is nil for no limit.
	DailyLimit *int
}

// QuietHours is a daily window in the user's zone, [Start, End) in minutes
// after local midnight; Start > End crosses midnight. Start never equals
// End.
type QuietHours struct {
	Start, End int
}

// Bounds of preferences.
const (
	MinutesPerDay = 24 * 60
	// MaxDailyLimit bounds dailyLimit: a limit above it limits nothing.
	MaxDailyLimit = 100_000
)

// ErrInvalidPreferences reports preferences PutPreferences cannot keep; the
// API validates before and never meets it.
var ErrInvalidPreferences = errors.New("store: invalid preferences")

// check applies the bounds above.
func (p Preferences) check() error {
	if q := p.QuietHours; q != nil && (q.Start < 0 || q.Start >= MinutesPerDay || q.End < 0 || q.End >= MinutesPerDay || q.Start == q.End) {
		return fmt.Errorf("%w: quiet hours %d-%d", ErrInvalidPreferences, q.Start, q.End)
	}
	if l := p.DailyLimit; l != nil && (*l < 0 || *l > MaxDailyLimit) {
		return fmt.Errorf("%w: daily limit %d", ErrInvalidPreferences, *l)
	}
	return nil
}

var preferencesSQL = preparedRead(`SELECT time_zone, quiet_start, quiet_end, daily_limit FROM user_preferences WHERE user_id = ?`)

// Preferences returns userID's preferences; the zero value when they set
// none. For a user whose task was just claimed they are those the claim
// read (claimedPrefs).
func (s *Store) Preferences(ctx context.Context, userID string) (Preferences, error) {
	if p, ok := s.claimed.get(userID, time.Now()); ok {
		return p, nil
	}
	p, err := scanPreferences(s.readRow(ctx, preferencesSQL, userID))
	if err != nil {
		return Preferences{}, fmt.Errorf("store: preferences: %w", err)
	}
	return p, nil
}

// scanPreferences reads a row of preferencesSQL; no row is no preference.
func scanPreferences(row rowScanner) (Preferences, error) {
	var zone sql.NullString
	var start, end, limit sql.NullInt64
	err := row.Scan(&zone, &start, &end, &limit)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Preferences{}, nil
	case err != nil:
		return Preferences{}, err
	}
	p := Preferences{TimeZone: zone.String}
	if start.Valid && end.Valid {
		p.QuietHours = &QuietHours{Start: int(start.Int64), End: int(end.Int64)}
	}
	if limit.Valid {
		n := int(limit.Int64)
		p.DailyLimit = &n
	}
	return p, nil
}

// UpdatePreferences changes userID's preferences with change, in one
// transaction, and returns what it stored. change may run more than once
// (on PostgreSQL) and must only compute. Preferences out of bounds fail
// with ErrInvalidPreferences and change nothing.
func (s *Store) UpdatePreferences(ctx context.Context, userID string, change func(Preferences) Preferences) (Preferences, error) {
	var stored Preferences
	err := s.write(ctx, func(tx *sql.Tx) error {
		current, err := scanPreferences(tx.QueryRowContext(ctx, preferencesSQL, userID))
		if err != nil {
			return err
		}
		stored = change(current)
		if err := stored.check(); err != nil {
			return err
		}
		var qs, qe, dl any
		if q := stored.QuietHours; q != nil {
			qs, qe = q.Start, q.End
		}
		if stored.DailyLimit != nil {
			dl = *stored.DailyLimit
		}
		var tz any
		if stored.TimeZone != "" {
			tz = stored.TimeZone
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO user_preferences (user_id, time_zone, quiet_start, quiet_end, daily_limit, updated_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (user_id) DO UPDATE SET time_zone = excluded.time_zone, quiet_start = excluded.quiet_start,
				quiet_end = excluded.quiet_end, daily_limit = excluded.daily_limit, updated_at = excluded.updated_at`,
			userID, tz, qs, qe, dl, millis(s.now()))
		return err
	})
	s.claimed.changed(userID)
	if err != nil {
		return Preferences{}, fmt.Errorf("store: update preferences: %w", err)
	}
	return stored, nil
}

// DeferTask moves the leased occurrence of a task to until, the end of its
// user's quiet hours, marked as deferred (DeferredTasks), with its lease and
// retry state cleared: nothing was sent, so the occurrence is a new one at
// until. ErrLeaseLost when the lease is no longer held.
func (s *Store) DeferTask(ctx context.Context, l Lease, until time.Time) error {
	return s.finish(ctx, l, deferTaskSQL, millis(until), millis(until), millis(s.now()))
}

var deferTaskSQL = preparedSQL(`UPDATE tasks SET next_send_at = ?, deferred_until = ?, lease_until = NULL,
	retry_after = NULL, retry_count = 0, updated_at = ?` + leaseFence)

// DeferredTasks returns when each of userID's pending tasks that waits for
// the end of quiet hours is due, by task id. A task's mark holds only while
// the task stays at the time it was deferred to, so a task delivered or
// moved since is not listed.
func (s *Store) DeferredTasks(ctx context.Context, userID string) (map[int64]time.Time, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT id, deferred_until FROM tasks
		WHERE user_id = ? AND status = 'pending' AND deferred_until = next_send_at`, userID)
	if err != nil {
		return nil, fmt.Errorf("store: deferred tasks: %w", err)
	}
	defer rows.Close()
	deferred := map[int64]time.Time{}
	for rows.Next() {
		var id, until int64
		if err := rows.Scan(&id, &until); err != nil {
			return nil, fmt.Errorf("store: deferred tasks: %w", err)
		}
		deferred[id] = fromMillis(until)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: deferred tasks: %w", err)
	}
	return deferred, nil
}

// IsDeferred reports whether t's occurrence is one that waited for the end
// of quiet hours: its release.
func (s *Store) IsDeferred(ctx context.Context, t Task) (bool, error) {
	var n int
	err := s.readRow(ctx, isDeferredSQL, t.ID, millis(t.NextSendAt)).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("store: task %d deferred: %w", t.ID, err)
	}
	return n > 0, nil
}

var isDeferredSQL = preparedRead(`SELECT count(*) FROM tasks WHERE id = ? AND deferred_until = ?`)

// TakeDailySlot counts the proactive push named key against userID's
// limit for day (the user's local date): true when it is within limit,
// false when limit pushes of that day came before it. A key that took a
// slot keeps it, so a retried occurrence is not counted twice.
func (s *Store) TakeDailySlot(ctx context.Context, userID, day, key string, limit int) (bool, error) {
	within := false
	err := s.write(ctx, func(tx *sql.Tx) error {
		var taken, mine int
		err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(CASE WHEN push_key = ? THEN 1 ELSE 0 END), 0)
			FROM proactive_pushes WHERE user_id = ? AND day = ?`, key, userID, day).Scan(&taken, &mine)
		switch {
		case err != nil:
			return err
		case mine > 0:
			within = true
			return nil
		case taken >= limit:
			within = false
			return nil
		}
		within = true
		_, err = tx.ExecContext(ctx, `INSERT INTO proactive_pushes (user_id, day, push_key, created_at) VALUES (?, ?, ?, ?)`,
			userID, day, key, millis(s.now()))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: take a daily slot: %w", err)
	}
	return within, nil
}

// dailySlotRetention is how long Prune keeps a taken slot: past the
// longest local day of any zone (UTC-12 to UTC+14).
const dailySlotRetention = 3 * 24 * time.Hour

// PruneDailySlots deletes the slots taken before cutoff.
func (s *Store) PruneDailySlots(ctx context.Context, cutoff time.Time) (int, error) {
	return s.execCount(ctx, "prune daily slots", `DELETE FROM proactive_pushes WHERE created_at < ?`, millis(cutoff))
}
