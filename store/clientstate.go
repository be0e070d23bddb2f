package store

import (
	"amsg/push"

	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Client state is the browser's cloud mirror: one value per (user,
// namespace, key), written last-write-wins. The layout is the standard's, so
// rows exported from an upstream D1 database read unchanged: a value of at
// most StateSliceBytes is one row sealed with the user key; a larger one is a
// root row holding the plaintext marker "\x1famsg-chunked\x1fv1\x1f<count>"
// plus <count> sealed slice rows in namespace "\x1famsg-chunks\x1f<ns>" under
// keys "<key>\x1f<i>", all carrying the root's updated_at. Sealed values are
// hex and never start with a control character, so the two cannot be
// confused; user names may not contain control characters, so the internal
// rows cannot be reached or overwritten through the API.

// Bounds of client state, the standard's.
const (
	// MaxStateEntries bounds the entries of one PutClientState call.
	MaxStateEntries = 200
	// MaxStateNamespaceLen and MaxStateKeyLen are in UTF-16 code units, as
	// JavaScript's String length counts them.
	MaxStateNamespaceLen = 128
	MaxStateKeyLen       = 256
	// DefaultMaxStateValueBytes is the default of Config.MaxStateValueBytes.
	DefaultMaxStateValueBytes = 5 << 20
	// StateSliceBytes is the largest value kept in one row; larger values are
	// split into slices of at most this many UTF-8 bytes.
	StateSliceBytes = 204800
)

const (
	stateSep          = "\x1f"
	stateChunkNSPfx   = stateSep + "amsg-chunks" + stateSep
	stateRootMarkPfx  = stateSep + "amsg-chunked" + stateSep + "v1" + stateSep
	stateSliceKeyStop = "\x20" // the byte after stateSep: "<key>\x1f…" < "<key>\x20"
)

var (
	// ErrInvalidClientState reports an entry PutClientState cannot keep.
	ErrInvalidClientState = errors.New("store: invalid client state entry")
	// ErrStateNameBlank, ErrStateNameTooLong and ErrStateNameReserved are the
	// reasons CheckStateNamespace and CheckStateKey refuse a name.
	ErrStateNameBlank    = errors.New("store: client-state name is blank")
	ErrStateNameTooLong  = errors.New("store: client-state name is too long")
	ErrStateNameReserved = errors.New("store: client-state name contains a control character (U+0000 to U+001F are reserved)")
)

// ClientStateEntry is one value of a user's client state.
type ClientStateEntry struct {
	Namespace string
	Key       string
	Value     string
	// UpdatedAt is the last-write-wins guard: the writer's version (or
	// builtAt) when it gave one, else its epoch-ms updatedAt. A write lands
	// when its guard is at least the stored one (ties overwrite); reads
	// report the stored guard. A guard ahead of the store's clock is stored
	// as the clock's now, so one client with a clock in the future cannot
	// lock a key against every other writer.
	UpdatedAt int64
	// Delete makes the entry delete its key (upstream's value: null), under
	// the same guard; Value is then ignored.
	Delete bool
	// Owner is what the write says of the value's owner; nil keeps the
	// owner it has. Either way the owner's generation is checked in the
	// write (ErrOwnerRetired fails the whole call, see claimOwnership).
	Owner *OwnerClaim
}

// StateKey names one client-state value.
type StateKey struct {
	Namespace string
	Key       string
}

// ClientStatePut is what PutClientState did.
type ClientStatePut struct {
	Upserted int
	// Deleted counts the deletes that were not stale, whether or not their
	// key was stored.
	Deleted int
	// Skipped lists the entries (writes and deletes) a newer stored value
	// kept out, in order.
	Skipped []StateKey
}

// CheckStateNamespace applies the standard's namespace rule, in its order:
// not blank (JavaScript trim), at most MaxStateNamespaceLen code units, no
// control characters.
func CheckStateNamespace(namespace string) error {
	return checkStateName(namespace, MaxStateNamespaceLen)
}

// CheckStateKey is CheckStateNamespace for keys, at most MaxStateKeyLen code
// units.
func CheckStateKey(key string) error { return checkStateName(key, MaxStateKeyLen) }

func checkStateName(name string, maxLen int) error {
	switch {
	case push.IsJSBlank(name):
		return ErrStateNameBlank
	case push.JSLength(name) > maxLen:
		return ErrStateNameTooLong
	case strings.ContainsFunc(name, isStateControl):
		return ErrStateNameReserved
	}
	return nil
}

func isStateControl(r rune) bool { return r < 0x20 }

// MaxStateValueBytes is the largest client-state value PutClientState
// accepts, in UTF-8 bytes (Config.MaxStateValueBytes).
func (s *Store) MaxStateValueBytes() int { return s.maxStateValueBytes }

// PutClientState writes entries for userID in one transaction, in order. An
// entry whose UpdatedAt (clamped to now) is below the stored value's (also
// clamped, so a future stamp stored before the clamp existed can be
// overwritten) is skipped; otherwise it replaces the value, or deletes it,
// and the slices of the value it replaces are deleted. Entries are checked
// first: one that breaks a rule (CheckStateNamespace, CheckStateKey, a
// value over MaxStateValueBytes or not UTF-8, UpdatedAt not positive)
// fails the call with ErrInvalidClientState and nothing is written.
func (s *Store) PutClientState(ctx context.Context, userID string, entries []ClientStateEntry) (ClientStatePut, error) {
	if len(entries) > MaxStateEntries {
		return ClientStatePut{}, fmt.Errorf("%w: %d entries, limit %d", ErrInvalidClientState, len(entries), MaxStateEntries)
	}
	for i, e := range entries {
		if err := s.checkStateEntry(e); err != nil {
			return ClientStatePut{}, fmt.Errorf("%w: entry %d: %w", ErrInvalidClientState, i, err)
		}
	}
	// Seal before taking the write lock: it is most of the work.
	key := s.userKey(userID)
	rows := make([]stateRows, len(entries))
	for i, e := range entries {
		if !e.Delete {
			rows[i] = sealStateValue(e.Value, key.SealAtRest)
		}
	}
	now := s.now().UnixMilli()
	var put ClientStatePut
	err := s.write(ctx, func(tx *sql.Tx) error {
		put = ClientStatePut{}
		for i, e := range entries {
			guard := min(e.UpdatedAt, now)
			var stored int64
			err := tx.QueryRowContext(s.statementContext(ctx), `SELECT updated_at FROM client_state WHERE user_id = ? AND namespace = ? AND key = ?`,
				userID, e.Namespace, e.Key).Scan(&stored)
			exists := err == nil
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if err := s.claimOwnership(ctx, tx, key, userID, "state", stateRef(e.Namespace, e.Key), e.Owner, exists); err != nil {
				return err
			}
			switch {
			case !exists:
			case min(stored, now) > guard:
				put.Skipped = append(put.Skipped, StateKey{e.Namespace, e.Key})
				continue
			}
			chunkNS := stateChunkNSPfx + e.Namespace
			if _, err := s.txExec(ctx, tx, `DELETE FROM client_state WHERE user_id = ? AND namespace = ? AND key > ? AND key < ?`,
				userID, chunkNS, e.Key+stateSep, e.Key+stateSliceKeyStop); err != nil {
				return err
			}
			if e.Delete {
				if _, err := s.txExec(ctx, tx, `DELETE FROM client_state WHERE user_id = ? AND namespace = ? AND key = ?`,
					userID, e.Namespace, e.Key); err != nil {
					return err
				}
				put.Deleted++
				continue
			}
			if err := s.upsertStateRow(ctx, tx, userID, e.Namespace, e.Key, rows[i].root, guard); err != nil {
				return err
			}
			for j, slice := range rows[i].slices {
				if err := s.upsertStateRow(ctx, tx, userID, chunkNS, e.Key+stateSep+strconv.Itoa(j), slice, guard); err != nil {
					return err
				}
			}
			put.Upserted++
		}
		return nil
	})
	if err != nil {
		return ClientStatePut{}, fmt.Errorf("store: put client state: %w", err)
	}
	return put, nil
}

func (s *Store) checkStateEntry(e ClientStateEntry) error {
	if err := CheckStateNamespace(e.Namespace); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	if err := CheckStateKey(e.Key); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	switch {
	case e.Delete && e.Value != "":
		return errors.New("a delete carries a value")
	case len(e.Value) > s.maxStateValueBytes:
		return fmt.Errorf("value is %d bytes, limit %d", len(e.Value), s.maxStateValueBytes)
	case !utf8.ValidString(e.Value):
		return errors.New("value is not UTF-8")
	case e.UpdatedAt <= 0:
		return fmt.Errorf("updatedAt %d is not positive", e.UpdatedAt)
	}
	return nil
}

func (s *Store) upsertStateRow(ctx context.Context, tx *sql.Tx, userID, namespace, key, value string, updatedAt int64) error {
	_, err := s.txExec(ctx, tx, `INSERT INTO client_state (user_id, namespace, key, value, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (user_id, namespace, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		userID, namespace, key, value, updatedAt)
	return err
}

// stateRows is one value as stored: the root row's value and, for a chunked
// value, the sealed slices.
type stateRows struct {
	root   string
	slices []string
}

// sealStateValue seals a value that fits one row, or splits a larger one on
// code-point boundaries into slices of at most StateSliceBytes and seals
// each behind a root marker.
func sealStateValue(value string, seal func([]byte) string) stateRows {
	if len(value) <= StateSliceBytes {
		return stateRows{root: seal([]byte(value))}
	}
	var r stateRows
	for value != "" {
		cut := len(value)
		if cut > StateSliceBytes {
			cut = StateSliceBytes
			for !utf8.RuneStart(value[cut]) {
				cut--
			}
		}
		r.slices = append(r.slices, seal([]byte(value[:cut])))
		value = value[cut:]
	}
	r.root = stateRootMarkPfx + strconv.Itoa(len(r.slices))
	return r
}

// stateRootCount parses a chunk root's marker: the slice count, or false
// when value is not a marker (then it is a sealed value).
func stateRootCount(value string) (int, bool) {
	digits, ok := strings.CutPrefix(value, stateRootMarkPfx)
	if !ok || digits == "" || digits[0] == '0' || strings.ContainsFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}

// ClientState returns userID's values in namespace, ordered by key, chunked
// values reassembled. A chunked value whose slices are missing or carry
// another updated_at than its root (a write cut short, or interleaved with
// another) is left out, and so is a row that does not decrypt (logged): a
// reader gets whole values or none. A namespace that is blank or holds a
// control character is refused (ErrStateNameBlank, ErrStateNameReserved);
// the internal slice rows are not readable directly. It holds the whole
// namespace: WalkClientState reads one without.
func (s *Store) ClientState(ctx context.Context, userID, namespace string) ([]ClientStateEntry, error) {
	var entries []ClientStateEntry
	var err error
	// A value replaced while it was read is read again.
	for range 3 {
		entries = []ClientStateEntry{}
		err = s.WalkClientState(ctx, userID, namespace, func(key string, updatedAt int64, text StateValueText) error {
			var value strings.Builder
			if err := text(func(piece []byte) error { value.Write(piece); return nil }); err != nil {
				return err
			}
			entries = append(entries, ClientStateEntry{Namespace: namespace, Key: key, Value: value.String(), UpdatedAt: updatedAt})
			return nil
		})
		if !errors.Is(err, ErrStateChanged) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return entries, nil
}

// DeleteClientState deletes all of userID's client state, slice rows
// included, and returns the number of rows deleted, as the standard counts.
func (s *Store) DeleteClientState(ctx context.Context, userID string) (int, error) {
	return s.execCount(ctx, "delete client state", `DELETE FROM client_state WHERE user_id = ?`, userID)
}

// DeleteClientStateNamespace deletes userID's values in namespace and their
// slice rows in one statement, so a reader never sees one without the
// other, and returns the number of rows deleted. It refuses a namespace
// CheckStateNamespace refuses, deleting nothing.
func (s *Store) DeleteClientStateNamespace(ctx context.Context, userID, namespace string) (int, error) {
	if err := CheckStateNamespace(namespace); err != nil {
		return 0, fmt.Errorf("store: delete client state namespace: %w", err)
	}
	return s.execCount(ctx, "delete client state namespace", `DELETE FROM client_state WHERE user_id = ? AND namespace IN (?, ?)`,
		userID, namespace, stateChunkNSPfx+namespace)
}

// MaxStateNamespaces bounds one ClientStateNamespaces listing, upstream's
// MAX_CLIENT_STATE_NAMESPACES.
const MaxStateNamespaces = 200

// StateNamespace is what one namespace of a user's client state holds.
// Slice rows count towards their namespace's ByteSize and UpdatedAt, not
// its EntryCount: they are parts of one value, not values.
type StateNamespace struct {
	Namespace  string
	EntryCount int
	// ByteSize is what the rows take as stored (sealed hex), not the
	// plaintext's length.
	ByteSize  int64
	UpdatedAt int64
}

// ClientStateNamespaces lists up to limit (1 to MaxStateNamespaces) of
// userID's namespaces in byte order of their names; truncated reports that
// there are more.
func (s *Store) ClientStateNamespaces(ctx context.Context, userID string, limit int) (namespaces []StateNamespace, truncated bool, err error) {
	if limit < 1 || limit > MaxStateNamespaces {
		return nil, false, fmt.Errorf("store: client state namespaces: limit %d is not in 1 to %d", limit, MaxStateNamespaces)
	}
	// A slice row's namespace is its value's namespace behind a prefix;
	// folding it there in SQL keeps the LIMIT exact.
	n := len(stateChunkNSPfx)
	rows, err := s.reader.QueryContext(ctx, fmt.Sprintf(`SELECT ns, sum(1 - slice), sum(length(value)), max(updated_at) FROM (
			SELECT CASE WHEN substr(namespace, 1, %[1]d) = ? THEN substr(namespace, %[2]d) ELSE namespace END AS ns,
				CASE WHEN substr(namespace, 1, %[1]d) = ? THEN 1 ELSE 0 END AS slice, value, updated_at
			FROM client_state WHERE user_id = ?) AS rows
		GROUP BY ns ORDER BY ns%[3]s LIMIT ?`, n, n+1, s.dialect.ByteOrder),
		stateChunkNSPfx, stateChunkNSPfx, userID, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("store: client state namespaces: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ns StateNamespace
		if err := rows.Scan(&ns.Namespace, &ns.EntryCount, &ns.ByteSize, &ns.UpdatedAt); err != nil {
			return nil, false, fmt.Errorf("store: client state namespaces: %w", err)
		}
		namespaces = append(namespaces, ns)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("store: client state namespaces: %w", err)
	}
	if len(namespaces) > limit {
		return namespaces[:limit], true, nil
	}
	return namespaces, false, nil
}
