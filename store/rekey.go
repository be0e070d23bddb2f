package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"amsg/store/usercrypt"
)

// sealedColumn is a column whose values are sealed at rest with the key of
// the user in owner; rows are addressed by the key columns.
type sealedColumn struct {
	table, column, owner string
	key                  []string
	from                 string // the FROM clause, when owner is in another table
	skipPrefix           string // values that are plaintext markers, not sealed
	binary               bool   // sealed as bytes (SealAtRestBytes), not as text
}

// sealedColumns are every sealed value of the database. A new sealed
// column belongs here, or rekey would leave it under the old key.
var sealedColumns = []sealedColumn{
	{table: "subscriptions", column: "subscription", owner: "user_id", key: []string{"id"}},
	{table: "tasks", column: "payload", owner: "user_id", key: []string{"id"}},
	{table: "client_state", column: "value", owner: "user_id", key: []string{"user_id", "namespace", "key"}, skipPrefix: stateSep},
	{table: "message_outbox", column: "payload", owner: "user_id", key: []string{"id"}, binary: true},
	{table: "transcript_sessions", column: "settings", owner: "owner", key: []string{"id"}},
	{table: "transcript_entries", column: "body", owner: "s.owner", key: []string{"session", "seq"},
		from: "transcript_entries JOIN transcript_sessions s ON s.id = transcript_entries.session"},
	{table: "interrupts", column: "body", owner: "user_id", key: []string{"id"}},
	// A reason is NULL until a denial gives one.
	{table: "interrupts", column: "reason", owner: "user_id", key: []string{"id"}, from: "interrupts WHERE reason IS NOT NULL"},
	{table: "webhook_endpoints", column: "secret", owner: "'" + webhookKeyOwner + "'", key: []string{"id"}},
}

// RekeyResult counts the values Rekey re-sealed.
type RekeyResult struct {
	Resealed int
}

// Rekey re-seals every sealed value under newMasterKey and records the new
// key's check value, in one transaction: afterwards the data opens under
// the new key only. The store must have been opened with the current key;
// the database keeps the new key itself only if it kept the old one.
// Reading a whole table at a time, it is for a maintenance window, with the
// server stopped.
func (s *Store) Rekey(ctx context.Context, newMasterKey string) (RekeyResult, error) {
	var res RekeyResult
	if err := usercrypt.ValidateMasterKey(newMasterKey); err != nil {
		return res, fmt.Errorf("store: rekey: %w: %w", ErrInvalidSecret, err)
	}
	next, err := usercrypt.NewKeyring(newMasterKey)
	if err != nil {
		return res, fmt.Errorf("store: rekey: %w", err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		res = RekeyResult{}
		for _, c := range sealedColumns {
			n, err := s.resealColumn(ctx, tx, c, next)
			if err != nil {
				return fmt.Errorf("%s.%s: %w", c.table, c.column, err)
			}
			res.Resealed += n
		}
		stored, err := s.readSecrets(ctx, tx)
		if err != nil {
			return err
		}
		values := map[string]string{secretMasterKeyCheck: masterKeyCheck(newMasterKey)}
		if stored[secretMasterKey] != "" {
			values[secretMasterKey] = newMasterKey
		}
		return s.putSecrets(ctx, tx, stored, values, millis(s.now()))
	})
	if err != nil {
		return res, fmt.Errorf("store: rekey: %w", err)
	}
	s.keyring, s.secrets.MasterKey = next, newMasterKey
	return res, nil
}

// resealColumn opens each value of one column with the current key and
// seals it with next. A value that does not open fails the whole rekey: it
// would be lost for good.
func (s *Store) resealColumn(ctx context.Context, tx *sql.Tx, c sealedColumn, next *usercrypt.Keyring) (int, error) {
	from := c.from
	if from == "" {
		from = c.table
	}
	keys := make([]string, len(c.key))
	for i, k := range c.key {
		keys[i] = c.table + "." + k
	}
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT %s, %s, %s.%s FROM %s`,
		strings.Join(keys, ", "), c.owner, c.table, c.column, from))
	if err != nil {
		return 0, err
	}
	type resealed struct {
		key   []any
		value any
	}
	var out []resealed
	for rows.Next() {
		key := make([]any, len(c.key))
		dest := make([]any, 0, len(c.key)+2)
		for i := range key {
			dest = append(dest, &key[i])
		}
		var owner string
		var value []byte
		if err := rows.Scan(append(dest, &owner, &value)...); err != nil {
			rows.Close()
			return 0, err
		}
		if c.skipPrefix != "" && strings.HasPrefix(string(value), c.skipPrefix) {
			continue
		}
		r, err := s.reseal(c, owner, value, next)
		if err != nil {
			rows.Close()
			return 0, fmt.Errorf("a value of %q does not open under the current master key: %w", owner, err)
		}
		out = append(out, resealed{key, r})
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return 0, err
	}
	if err := rows.Close(); err != nil { // before the updates on the transaction's one connection
		return 0, err
	}
	where := make([]string, len(c.key))
	for i, k := range c.key {
		where[i] = k + " = ?"
	}
	update := fmt.Sprintf(`UPDATE %s SET %s = ? WHERE %s`, c.table, c.column, strings.Join(where, " AND "))
	for _, r := range out {
		if _, err := tx.ExecContext(ctx, update, append([]any{r.value}, r.key...)...); err != nil {
			return 0, err
		}
	}
	return len(out), nil
}

// reseal opens one value of c, sealed under owner's current key, and seals
// it under next, in c's form: bytes or the standard's text.
func (s *Store) reseal(c sealedColumn, owner string, value []byte, next *usercrypt.Keyring) (any, error) {
	if c.binary {
		plaintext, err := s.userKey(owner).OpenAtRestBytes(value)
		if err != nil {
			return nil, err
		}
		return next.UserKey(owner).SealAtRestBytes(plaintext), nil
	}
	plaintext, err := s.userKey(owner).OpenAtRest(string(value))
	if err != nil {
		return nil, err
	}
	return next.UserKey(owner).SealAtRest(plaintext), nil
}
