package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"amsg/push"
)

// LLM credentials are a user's model credentials stored once and named by
// tasks (credRefs) instead of copied into each: a rotated key reaches every
// pending task. The value is sealed with the user key like every secret the
// standard keeps; only ids and times are ever listed.

// Bounds of LLM credentials, upstream's.
const (
	// MaxCredentials is the rows one user may keep.
	MaxCredentials = 500
	// MaxCredentialBatch bounds one PutLLMCredentials call.
	MaxCredentialBatch = 100
	// MaxCredIDLen is a cred_id's length in UTF-16 code units.
	MaxCredIDLen = 128
	// MaxCredentialFieldLen bounds apiUrl, apiKey and primaryModel.
	MaxCredentialFieldLen = 2048
)

var (
	// ErrInvalidCredential reports a credential or cred_id the store
	// cannot keep or look up.
	ErrInvalidCredential = errors.New("store: invalid LLM credential")
)

// CredentialLimitError is a PutLLMCredentials over MaxCredentials; nothing
// was written.
type CredentialLimitError struct {
	Existing, Adding int
}

func (e *CredentialLimitError) Error() string {
	return fmt.Sprintf("store: LLM credentials: %d stored and %d new exceed %d", e.Existing, e.Adding, MaxCredentials)
}

// LLMCredential is one credential's value.
type LLMCredential struct {
	APIURL       string `json:"apiUrl"`
	APIKey       string `json:"apiKey"`
	PrimaryModel string `json:"primaryModel"`
}

// CredentialEntry is one credential of a PutLLMCredentials batch.
type CredentialEntry struct {
	CredID string
	Value  LLMCredential
	// Owner is what the write says of the credential's owner, checked in
	// the write (ErrOwnerRetired fails the batch, see claimOwnership).
	Owner *OwnerClaim
}

// CredentialInfo is what a listing says of a credential: never its value.
type CredentialInfo struct {
	CredID    string
	UpdatedAt int64 // epoch milliseconds
}

// CheckCredID applies upstream's cred_id rule: 1 to MaxCredIDLen code
// units, no control characters (U+0000 to U+001F, U+007F).
func CheckCredID(id string) error {
	if id == "" || push.JSLength(id) > MaxCredIDLen || strings.ContainsFunc(id, isCredControl) {
		return fmt.Errorf("%w: a cred_id must be 1 to %d characters without control characters", ErrInvalidCredential, MaxCredIDLen)
	}
	return nil
}

func isCredControl(r rune) bool { return r < 0x20 || r == 0x7f }

// PutLLMCredentials writes a batch for userID in one transaction, a later
// entry of the same cred_id winning, and returns how many rows it wrote.
// A batch that would take the user over MaxCredentials writes nothing
// (*CredentialLimitError).
func (s *Store) PutLLMCredentials(ctx context.Context, userID string, entries []CredentialEntry) (int, error) {
	if len(entries) == 0 || len(entries) > MaxCredentialBatch {
		return 0, fmt.Errorf("%w: %d credentials, 1 to %d per batch", ErrInvalidCredential, len(entries), MaxCredentialBatch)
	}
	last := map[string]int{}
	for i, e := range entries {
		if err := CheckCredID(e.CredID); err != nil {
			return 0, err
		}
		last[e.CredID] = i
	}
	key := s.userKey(userID)
	type row struct {
		id, sealed string
		owner      *OwnerClaim
	}
	var rows []row
	for i, e := range entries {
		if last[e.CredID] != i {
			continue
		}
		value, err := json.Marshal(e.Value)
		if err != nil {
			return 0, err
		}
		rows = append(rows, row{e.CredID, key.SealAtRest(value), e.Owner})
	}
	now := millis(s.now())
	err := s.write(ctx, func(tx *sql.Tx) error {
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.id
		}
		idsJSON, _ := json.Marshal(ids)
		var existing, known int
		if err := tx.QueryRowContext(ctx, `SELECT count(*), count(CASE WHEN cred_id IN (`+s.dialect.InJSONArray+`) THEN 1 END)
			FROM llm_credentials WHERE user_id = ?`, string(idsJSON), userID).Scan(&existing, &known); err != nil {
			return err
		}
		if adding := len(rows) - known; existing+adding > MaxCredentials {
			return &CredentialLimitError{Existing: existing, Adding: adding}
		}
		for _, r := range rows {
			var exists int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM llm_credentials WHERE user_id = ? AND cred_id = ?`, userID, r.id).Scan(&exists); err != nil {
				return err
			}
			if err := s.claimOwnership(ctx, tx, key, userID, "credential", r.id, r.owner, exists > 0); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO llm_credentials (user_id, cred_id, value, updated_at) VALUES (?, ?, ?, ?)
				ON CONFLICT (user_id, cred_id) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
				userID, r.id, r.sealed, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: put LLM credentials: %w", err)
	}
	return len(rows), nil
}

// LLMCredentials lists userID's credentials, by cred_id, without values.
func (s *Store) LLMCredentials(ctx context.Context, userID string) ([]CredentialInfo, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT cred_id, updated_at FROM llm_credentials WHERE user_id = ?
		ORDER BY cred_id`+s.dialect.ByteOrder, userID)
	if err != nil {
		return nil, fmt.Errorf("store: LLM credentials: %w", err)
	}
	defer rows.Close()
	list := []CredentialInfo{}
	for rows.Next() {
		var c CredentialInfo
		if err := rows.Scan(&c.CredID, &c.UpdatedAt); err != nil {
			return nil, fmt.Errorf("store: LLM credentials: %w", err)
		}
		list = append(list, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: LLM credentials: %w", err)
	}
	return list, nil
}

// MissingLLMCredentials returns those of ids userID has no credential
// under, in order, each once.
func (s *Store) MissingLLMCredentials(ctx context.Context, userID string, ids []string) ([]string, error) {
	stored, err := s.LLMCredentials(ctx, userID)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, c := range stored {
		have[c.CredID] = true
	}
	var missing []string
	for _, id := range ids {
		if !have[id] {
			missing = append(missing, id)
			have[id] = true // once
		}
	}
	return missing, nil
}

// LLMCredential opens userID's credential credID; ok is false when there is
// none, or its value does not open (a changed master key: logged), which a
// new PUT repairs.
func (s *Store) LLMCredential(ctx context.Context, userID, credID string) (cred LLMCredential, ok bool, err error) {
	var sealed string
	err = s.reader.QueryRowContext(ctx, `SELECT value FROM llm_credentials WHERE user_id = ? AND cred_id = ?`, userID, credID).Scan(&sealed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return LLMCredential{}, false, nil
	case err != nil:
		return LLMCredential{}, false, fmt.Errorf("store: LLM credential: %w", err)
	}
	plaintext, err := s.userKey(userID).OpenAtRest(sealed)
	if err == nil {
		err = json.Unmarshal(plaintext, &cred)
	}
	if err != nil {
		s.log.Warn("store: an LLM credential does not open", "userId", userID, "err", err)
		return LLMCredential{}, false, nil
	}
	return cred, true, nil
}

// DeleteLLMCredentials deletes userID's credentials under ids and returns
// how many it deleted.
func (s *Store) DeleteLLMCredentials(ctx context.Context, userID string, ids []string) (int, error) {
	for _, id := range ids {
		if err := CheckCredID(id); err != nil {
			return 0, err
		}
	}
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return 0, err
	}
	return s.execCount(ctx, "delete LLM credentials", `DELETE FROM llm_credentials WHERE user_id = ? AND cred_id IN (`+s.dialect.InJSONArray+`)`,
		userID, string(idsJSON))
}

// DeleteLLMCredentialsWithPrefix deletes userID's credentials whose
// cred_id starts with prefix (a valid cred_id itself) and returns how many.
func (s *Store) DeleteLLMCredentialsWithPrefix(ctx context.Context, userID, prefix string) (int, error) {
	if err := CheckCredID(prefix); err != nil {
		return 0, err
	}
	// substr counts characters on both backends, as RuneCount does.
	return s.execCount(ctx, "delete LLM credentials", `DELETE FROM llm_credentials WHERE user_id = ? AND substr(cred_id, 1, ?) = ?`,
		userID, utf8.RuneCountInString(prefix), prefix)
}

// DeleteAllLLMCredentials deletes every credential of userID and returns
// how many.
func (s *Store) DeleteAllLLMCredentials(ctx context.Context, userID string) (int, error) {
	return s.execCount(ctx, "delete LLM credentials", `DELETE FROM llm_credentials WHERE user_id = ?`, userID)
}
