package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"amsg/store/usercrypt"
)

// Session transcripts: one row per session of an owner, one row per entry
// of its log in sequence order. An owner is whoever may read and continue
// the session (a user id, or a token the agent loop derives for sessions
// without one); session ids are the caller's, so two owners may use the
// same one. Entry bodies and the session settings are sealed with the
// owner's key; the columns beside them (type, iteration, token counts, the
// ids of the pushes an entry produced) carry no user data.
//
// last_seq is the sequence number of the last entry ever appended, so it
// survives pruning: compare-and-append checks it, and a pruned session
// never reuses a number.

// AnySeq as TranscriptAppend.After appends whatever the session holds.
const AnySeq int64 = -1

// Errors of the transcript operations.
var (
	// ErrTranscriptNotFound: the owner has no session with this id.
	ErrTranscriptNotFound = errors.New("store: transcript not found")
	// ErrConcurrentAppend: the session's last sequence number is no longer
	// the one the caller read; someone else appended first. Reload and
	// decide again.
	ErrConcurrentAppend = errors.New("store: transcript changed since it was read")
)

// TokenUsage counts tokens: Cached is part of Input, Reasoning part of
// Output.
type TokenUsage struct {
	Input     int64
	Cached    int64
	Output    int64
	Reasoning int64
}

// Add returns the sum of u and v.
func (u TokenUsage) Add(v TokenUsage) TokenUsage {
	return TokenUsage{u.Input + v.Input, u.Cached + v.Cached, u.Output + v.Output, u.Reasoning + v.Reasoning}
}

// Total is Input plus Output.
func (u TokenUsage) Total() int64 { return u.Input + u.Output }

// TranscriptEntry is one typed entry of a session's log. The store keeps
// Type and Body as given; the agent loop defines them.
type TranscriptEntry struct {
	Seq       int64 // assigned by AppendTranscript, from 1
	ID        string
	At        time.Time
	Type      string
	Iteration int
	Usage     TokenUsage
	Pushes    []string        // messageIds of the pushes the entry produced
	Body      json.RawMessage // the type's fields; sealed at rest
}

// Transcript is a session and its entries in sequence order.
type Transcript struct {
	Owner     string
	SessionID string
	Settings  json.RawMessage
	LastSeq   int64
	Usage     TokenUsage // of every entry ever appended, pruned ones included
	CreatedAt time.Time
	UpdatedAt time.Time
	Entries   []TranscriptEntry
}

// TranscriptAppend is one AppendTranscript call.
type TranscriptAppend struct {
	Owner     string
	SessionID string
	// After is the session's last sequence number as the caller read it:
	// the entries are appended only if it is still that (0 for a session
	// with no entries yet, which may not exist), else ErrConcurrentAppend.
	// AnySeq appends unconditionally.
	After int64
	// Settings replaces the session's settings when not nil; a new
	// session without them gets {}.
	Settings json.RawMessage
	Entries  []TranscriptEntry
}

// TranscriptHead is a session's state after an append.
type TranscriptHead struct {
	LastSeq int64
	Usage   TokenUsage // of every entry ever appended
}

// AppendTranscript creates the session if needed and appends the entries in
// one transaction, the compare of After included, so of two appends that
// read the same sequence number exactly one succeeds. It returns the
// session's state after the append.
func (s *Store) AppendTranscript(ctx context.Context, a TranscriptAppend) (TranscriptHead, error) {
	key := s.userKey(a.Owner)
	var sealedSettings any // NULL keeps the stored settings
	var initial string
	if a.Settings != nil {
		initial = key.SealAtRest(a.Settings)
		sealedSettings = initial
	} else {
		initial = key.SealAtRest([]byte("{}"))
	}
	now := millis(s.now())
	var head TranscriptHead
	err := s.write(ctx, func(tx *sql.Tx) error {
		var id, seq int64
		err := tx.QueryRowContext(s.statementContext(ctx), `INSERT INTO transcript_sessions (owner, session_id, settings, last_seq,
				input_tokens, cached_tokens, output_tokens, reasoning_tokens, created_at, updated_at)
			VALUES (?, ?, ?, 0, 0, 0, 0, 0, ?, ?)
			ON CONFLICT (owner, session_id) DO UPDATE SET updated_at = excluded.updated_at
			RETURNING id, last_seq`,
			a.Owner, a.SessionID, initial, now, now).Scan(&id, &seq)
		if err != nil {
			return err
		}
		if a.After != AnySeq && a.After != seq {
			return ErrConcurrentAppend
		}
		stmt, err := tx.PrepareContext(s.statementContext(ctx), `INSERT INTO transcript_entries (session, seq, id, at, type, iteration,
				input_tokens, cached_tokens, output_tokens, reasoning_tokens, pushes, body)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		var used TokenUsage
		for _, e := range a.Entries {
			seq++
			pushes, err := json.Marshal(nonNil(e.Pushes))
			if err != nil {
				return err
			}
			u := e.Usage
			if _, err := stmt.ExecContext(s.statementContext(ctx), id, seq, e.ID, millis(e.At), e.Type, e.Iteration,
				u.Input, u.Cached, u.Output, u.Reasoning, string(pushes), key.SealAtRest(e.Body)); err != nil {
				return err
			}
			used = used.Add(u)
		}
		u := &head.Usage
		return tx.QueryRowContext(s.statementContext(ctx), `UPDATE transcript_sessions SET last_seq = ?, settings = coalesce(?, settings),
				input_tokens = input_tokens + ?, cached_tokens = cached_tokens + ?,
				output_tokens = output_tokens + ?, reasoning_tokens = reasoning_tokens + ?
			WHERE id = ?
			RETURNING last_seq, input_tokens, cached_tokens, output_tokens, reasoning_tokens`,
			seq, sealedSettings, used.Input, used.Cached, used.Output, used.Reasoning, id).
			Scan(&head.LastSeq, &u.Input, &u.Cached, &u.Output, &u.Reasoning)
	})
	if errors.Is(err, ErrConcurrentAppend) {
		return TranscriptHead{}, err
	}
	if err != nil {
		return TranscriptHead{}, fmt.Errorf("store: append transcript: %w", err)
	}
	return head, nil
}

func nonNil(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

// Transcript returns the owner's session with its entries, read in one
// snapshot. A session of another owner is ErrTranscriptNotFound.
func (s *Store) Transcript(ctx context.Context, owner, sessionID string) (*Transcript, error) {
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("store: transcript: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	t, err := readTranscript(ctx, tx, s.userKey(owner), owner, sessionID)
	if err != nil && !errors.Is(err, ErrTranscriptNotFound) {
		return nil, fmt.Errorf("store: transcript: %w", err)
	}
	return t, err
}

func readTranscript(ctx context.Context, tx *sql.Tx, key usercrypt.Key, owner, sessionID string) (*Transcript, error) {
	t := &Transcript{Owner: owner, SessionID: sessionID}
	var id, created, updated int64
	var settings string
	err := tx.QueryRowContext(ctx, `SELECT id, settings, last_seq, input_tokens, cached_tokens, output_tokens,
			reasoning_tokens, created_at, updated_at
		FROM transcript_sessions WHERE owner = ? AND session_id = ?`, owner, sessionID).
		Scan(&id, &settings, &t.LastSeq, &t.Usage.Input, &t.Usage.Cached, &t.Usage.Output, &t.Usage.Reasoning, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrTranscriptNotFound
	}
	if err != nil {
		return nil, err
	}
	t.CreatedAt, t.UpdatedAt = fromMillis(created), fromMillis(updated)
	if t.Settings, err = key.OpenAtRest(settings); err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT seq, id, at, type, iteration, input_tokens, cached_tokens,
			output_tokens, reasoning_tokens, pushes, body
		FROM transcript_entries WHERE session = ? ORDER BY seq`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var e TranscriptEntry
		var at int64
		var pushes, body string
		if err := rows.Scan(&e.Seq, &e.ID, &at, &e.Type, &e.Iteration, &e.Usage.Input, &e.Usage.Cached,
			&e.Usage.Output, &e.Usage.Reasoning, &pushes, &body); err != nil {
			return nil, err
		}
		e.At = fromMillis(at)
		if err := json.Unmarshal([]byte(pushes), &e.Pushes); err != nil {
			return nil, fmt.Errorf("entry %d pushes: %w", e.Seq, err)
		}
		if e.Body, err = key.OpenAtRest(body); err != nil {
			return nil, fmt.Errorf("entry %d: %w", e.Seq, err)
		}
		t.Entries = append(t.Entries, e)
	}
	return t, rows.Err()
}

// PruneTranscripts deletes the entries appended before cutoff and the
// sessions nothing was appended to since, and returns how many entries it
// deleted. The server calls it periodically with now minus the retention.
func (s *Store) PruneTranscripts(ctx context.Context, cutoff time.Time) (int, error) {
	var deleted int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `DELETE FROM transcript_entries WHERE at < ?`, millis(cutoff))
		if err != nil {
			return err
		}
		if deleted, err = res.RowsAffected(); err != nil {
			return err
		}
		_, err = s.txExec(ctx, tx, `DELETE FROM transcript_sessions WHERE updated_at < ?`, millis(cutoff))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: prune transcripts: %w", err)
	}
	return int(deleted), nil
}
