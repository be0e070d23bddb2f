package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"amsg/push"
)

// The operator's reads and writes across users: the admin API's lists, the
// delivery chart, deleting a user, and broadcasts. The SQL is kept to what
// SQLite and PostgreSQL both accept.

// The broadcasts table holds one row per operator broadcast. The message is the
// operator's, sent to many users, so it is stored in plaintext; cursor is
// the last user id handled, so a stopped broadcast resumes after it.

// UserSummary is one user as the operator sees it: every user id that has a
// device, a task, client state or outbox rows.
type UserSummary struct {
	UserID       string
	Devices      int
	PendingTasks int
	// LastSeen is the newest device registration (browsers re-register on
	// every start); zero without devices.
	LastSeen time.Time
}

// MaxAdminPage bounds the rows of one admin list.
const MaxAdminPage = 500

// Users returns up to limit users whose id sorts after `after`, in id order.
func (s *Store) Users(ctx context.Context, after string, limit int) ([]UserSummary, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT u.user_id,
		(SELECT count(*) FROM subscriptions s WHERE s.user_id = u.user_id),
		(SELECT max(updated_at) FROM subscriptions s WHERE s.user_id = u.user_id),
		(SELECT count(*) FROM tasks t WHERE t.user_id = u.user_id AND t.status = 'pending')
		FROM (SELECT user_id FROM subscriptions UNION SELECT user_id FROM tasks
			UNION SELECT user_id FROM client_state UNION SELECT user_id FROM message_outbox) u
		WHERE u.user_id > ? ORDER BY u.user_id LIMIT ?`, after, min(max(limit, 1), MaxAdminPage))
	if err != nil {
		return nil, fmt.Errorf("store: users: %w", err)
	}
	defer rows.Close()
	var users []UserSummary
	for rows.Next() {
		var u UserSummary
		var lastSeen sql.NullInt64
		if err := rows.Scan(&u.UserID, &u.Devices, &lastSeen, &u.PendingTasks); err != nil {
			return nil, fmt.Errorf("store: users: %w", err)
		}
		if lastSeen.Valid {
			u.LastSeen = fromMillis(lastSeen.Int64)
		}
		users = append(users, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: users: %w", err)
	}
	return users, nil
}

// AllTasks returns up to limit tasks of every user, in status unless it is
// empty, those with an id above afterID, in id order.
func (s *Store) AllTasks(ctx context.Context, status TaskStatus, afterID int64, limit int) ([]Task, error) {
	filter, args := `id > ?`, []any{afterID}
	if status != "" {
		filter, args = filter+` AND status = ?`, append(args, string(status))
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT `+taskColumns+` FROM tasks WHERE `+filter+` ORDER BY id LIMIT ?`,
		append(args, min(max(limit, 1), MaxAdminPage))...)
	if err != nil {
		return nil, fmt.Errorf("store: all tasks: %w", err)
	}
	tasks, err := s.scanTasks(rows)
	if err != nil {
		return nil, fmt.Errorf("store: all tasks: %w", err)
	}
	return tasks, nil
}

// FailedAttempts returns up to limit logged attempts that did not deliver,
// newest first, made at or after since.
func (s *Store) FailedAttempts(ctx context.Context, since time.Time, limit int) (attempts []push.Attempt, err error) {
	limit = min(max(limit, 1), MaxAdminPage)
	err = s.readSince(ctx, attemptsByTime, millis(since), func(q searcher, r rowRange) error {
		from := millis(since)
		if r.op != "" {
			// On SQLite (timeorder.go) the newest limit failures by rowid,
			// a walk back from the end, are no newer than the newest limit
			// by time: those lie at or past the oldest of them, whose range
			// is sorted instead of all since since.
			var oldest sql.NullInt64
			var found int
			if err := q.QueryRowContext(ctx, newestFailuresSQL, append(r.args(), from, string(push.OutcomeDelivered), limit)...).
				Scan(&oldest, &found); err != nil {
				return fmt.Errorf("store: failed attempts: %w", err)
			}
			if found == limit && oldest.Int64 > from {
				from = oldest.Int64
				if r, err = s.rowsSince(ctx, q, attemptsByTime, from); err != nil {
					return fmt.Errorf("store: failed attempts: %w", err)
				}
			}
		}
		attempts, err = s.queryAttempts(ctx, q, "failed attempts", failedAttemptsWhere(r),
			append(r.args(), from, string(push.OutcomeDelivered), limit)...)
		return err
	})
	return attempts, err
}

// newestFailuresSQL reads the oldest time of the newest failed attempts by
// rowid from a rowid (FailedAttempts), and how many there were.
const newestFailuresSQL = `SELECT min(at), count(*) FROM (SELECT at FROM delivery_log
	WHERE id >= ? AND at >= ? AND outcome <> ? ORDER BY id DESC LIMIT ?)`

// failedAttemptsWhere selects FailedAttempts' rows in r.
func failedAttemptsWhere(r rowRange) string {
	return `WHERE ` + r.where("delivery_log") + `at >= ? AND outcome <> ? ORDER BY at DESC, id DESC LIMIT ?`
}

// OutcomeCount is how many attempts of one outcome one minute saw.
type OutcomeCount struct {
	Minute  time.Time
	Outcome push.Outcome
	Count   int
}

// AttemptsPerMinute counts the delivery log's attempts made at or after
// since by minute and outcome, oldest minute first.
func (s *Store) AttemptsPerMinute(ctx context.Context, since time.Time) (counts []OutcomeCount, err error) {
	err = s.readSince(ctx, attemptsByTime, millis(since), func(q searcher, r rowRange) error {
		rows, err := q.QueryContext(ctx, attemptsPerMinuteSQL(r), append(r.args(), millis(since))...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c OutcomeCount
			var minute int64
			var outcome string
			if err := rows.Scan(&minute, &outcome, &c.Count); err != nil {
				return err
			}
			c.Minute, c.Outcome = fromMillis(minute*60000), push.Outcome(outcome)
			counts = append(counts, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: attempts per minute: %w", err)
	}
	return counts, nil
}

// attemptsPerMinuteSQL counts AttemptsPerMinute's rows in r.
func attemptsPerMinuteSQL(r rowRange) string {
	return `SELECT at / 60000 AS minute, outcome, count(*) FROM delivery_log
		WHERE ` + r.where("delivery_log") + `at >= ? GROUP BY at / 60000, outcome ORDER BY minute, outcome`
}

// UserDeletion is how many rows DeleteUser removed from each table.
type UserDeletion struct {
	Devices     int `json:"devices"`
	Tasks       int `json:"tasks"`
	ClientState int `json:"clientState"`
	Outbox      int `json:"outbox"`
	Sessions    int `json:"sessions"`
	Attempts    int `json:"deliveryLog"`
	Events      int `json:"messageEvents"`
	// Preferences counts the preferences row, the daily slots and the
	// idempotency keys.
	Preferences int `json:"preferences"`
	TokenProofs int `json:"tokenProofs"`
	Credentials int `json:"llmCredentials"`
	// CloudData counts the owners, ownership records and cleanup records.
	CloudData int `json:"cloudData"`
}

// Total is every row removed.
func (d UserDeletion) Total() int {
	return d.Devices + d.Tasks + d.ClientState + d.Outbox + d.Sessions + d.Attempts + d.Events + d.Preferences + d.TokenProofs + d.Credentials + d.CloudData
}

// DeleteUser removes everything stored for userID in one transaction: its
// devices, tasks, client state, outbox, transcripts (their entries go with
// their sessions), delivery log rows, message events, preferences, daily slots,
// idempotency keys, client token proof, LLM credentials and cloud-data
// records.
func (s *Store) DeleteUser(ctx context.Context, userID string) (UserDeletion, error) {
	var d UserDeletion
	err := s.write(ctx, func(tx *sql.Tx) error {
		d = UserDeletion{} // a write may run more than once
		// The events first: those of the outbox rows by their outbox_id,
		// before the outbox's deletion would set it to NULL in each.
		var err error
		if d.Events, err = deleteUserEvents(ctx, tx, userID); err != nil {
			return err
		}
		for _, step := range []struct {
			query string
			n     *int
		}{
			{`DELETE FROM subscriptions WHERE user_id = ?`, &d.Devices},
			{`DELETE FROM tasks WHERE user_id = ?`, &d.Tasks},
			{`DELETE FROM client_state WHERE user_id = ?`, &d.ClientState},
			{`DELETE FROM message_outbox WHERE user_id = ?`, &d.Outbox},
			{`DELETE FROM transcript_sessions WHERE owner = ?`, &d.Sessions},
			{`DELETE FROM delivery_log WHERE user_id = ?`, &d.Attempts},
			{`DELETE FROM user_preferences WHERE user_id = ?`, &d.Preferences},
			{`DELETE FROM proactive_pushes WHERE user_id = ?`, &d.Preferences},
			{`DELETE FROM idempotency_keys WHERE scope = ?`, &d.Preferences},
			{`DELETE FROM client_token_proofs WHERE user_id = ?`, &d.TokenProofs},
			{`DELETE FROM llm_credentials WHERE user_id = ?`, &d.Credentials},
			{`DELETE FROM cloud_owned WHERE user_id = ?`, &d.CloudData},
			{`DELETE FROM cloud_owners WHERE user_id = ?`, &d.CloudData},
			{`DELETE FROM cloud_records WHERE user_id = ?`, &d.CloudData},
		} {
			res, err := tx.ExecContext(ctx, step.query, userID)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			*step.n += int(n)
		}
		return nil
	})
	if err != nil {
		return UserDeletion{}, fmt.Errorf("store: delete user: %w", err)
	}
	return d, nil
}

// BroadcastStatus is where a broadcast stands.
type BroadcastStatus string

const (
	BroadcastRunning BroadcastStatus = "running"
	BroadcastDone    BroadcastStatus = "done"
	BroadcastStopped BroadcastStatus = "stopped" // the process ended mid-way; resume continues after Cursor
)

// ErrBroadcastNotFound: no broadcast has this id.
var ErrBroadcastNotFound = errors.New("store: broadcast not found")

// Broadcast is one operator message to many users.
type Broadcast struct {
	ID      string
	Message json.RawMessage
	// UserIDs are the recipients in order; nil means every user, in id
	// order.
	UserIDs []string
	Cursor  string // the last user id handled; "" before the first
	// RatePerSecond is the pace in users per second, kept so a resumed
	// broadcast goes on at the pace it was started with.
	RatePerSecond int
	Sent          int
	Failed        int
	Status        BroadcastStatus
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// CreateBroadcast stores a new running broadcast.
func (s *Store) CreateBroadcast(ctx context.Context, b Broadcast) error {
	var ids any
	if b.UserIDs != nil {
		raw, err := json.Marshal(b.UserIDs)
		if err != nil {
			return fmt.Errorf("store: create broadcast: %w", err)
		}
		ids = string(raw)
	}
	now := millis(s.now())
	_, err := s.writer.ExecContext(ctx, `INSERT INTO broadcasts (id, message, user_ids, cursor, sent, failed, status, created_at, updated_at, rate_per_second)
		VALUES (?, ?, ?, '', 0, 0, ?, ?, ?, ?)`, b.ID, string(b.Message), ids, string(BroadcastRunning), now, now, b.RatePerSecond)
	if err != nil {
		return fmt.Errorf("store: create broadcast: %w", err)
	}
	return nil
}

// AdvanceBroadcast records progress: the cursor moves to the last user
// handled and the counters grow.
func (s *Store) AdvanceBroadcast(ctx context.Context, id, cursor string, sent, failed int, status BroadcastStatus) error {
	n, err := s.execCount(ctx, "advance broadcast", `UPDATE broadcasts SET cursor = ?, sent = sent + ?, failed = failed + ?,
		status = ?, updated_at = ? WHERE id = ?`, cursor, sent, failed, string(status), millis(s.now()), id)
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrBroadcastNotFound
	}
	return nil
}

const broadcastColumns = `id, message, user_ids, cursor, sent, failed, status, created_at, updated_at, rate_per_second`

// GetBroadcast returns one broadcast.
func (s *Store) GetBroadcast(ctx context.Context, id string) (Broadcast, error) {
	b, err := scanBroadcast(s.reader.QueryRowContext(ctx, `SELECT `+broadcastColumns+` FROM broadcasts WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Broadcast{}, ErrBroadcastNotFound
	}
	if err != nil {
		return Broadcast{}, fmt.Errorf("store: broadcast: %w", err)
	}
	return b, nil
}

// Broadcasts returns the newest broadcasts first, at most limit, in status
// unless it is empty.
func (s *Store) Broadcasts(ctx context.Context, status BroadcastStatus, limit int) ([]Broadcast, error) {
	filter, args := ``, []any{}
	if status != "" {
		filter, args = `WHERE status = ?`, append(args, string(status))
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT `+broadcastColumns+` FROM broadcasts `+filter+
		` ORDER BY created_at DESC, id LIMIT ?`, append(args, min(max(limit, 1), MaxAdminPage))...)
	if err != nil {
		return nil, fmt.Errorf("store: broadcasts: %w", err)
	}
	defer rows.Close()
	var out []Broadcast
	for rows.Next() {
		b, err := scanBroadcast(rows)
		if err != nil {
			return nil, fmt.Errorf("store: broadcasts: %w", err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: broadcasts: %w", err)
	}
	return out, nil
}

func scanBroadcast(row rowScanner) (Broadcast, error) {
	var b Broadcast
	var message, status string
	var ids sql.NullString
	var created, updated int64
	if err := row.Scan(&b.ID, &message, &ids, &b.Cursor, &b.Sent, &b.Failed, &status, &created, &updated, &b.RatePerSecond); err != nil {
		return Broadcast{}, err
	}
	if ids.Valid {
		if err := json.Unmarshal([]byte(ids.String), &b.UserIDs); err != nil {
			return Broadcast{}, err
		}
	}
	b.Message, b.Status = json.RawMessage(message), BroadcastStatus(status)
	b.CreatedAt, b.UpdatedAt = fromMillis(created), fromMillis(updated)
	return b, nil
}

// DueTasks counts pending tasks whose time has come at now and that no one
// is delivering (no live lease, no backoff in force): the scheduler's
// backlog.
func (s *Store) DueTasks(ctx context.Context, now time.Time) (int, error) {
	var n int
	ms := millis(now)
	err := s.reader.QueryRowContext(ctx, `SELECT count(*) FROM tasks WHERE status = 'pending' AND next_send_at <= ?
		AND (lease_until IS NULL OR lease_until < ?) AND (retry_after IS NULL OR retry_after <= ?)`, ms, ms, ms).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: due tasks: %w", err)
	}
	return n, nil
}
