package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"amsg/push"
)

// Reading a namespace without holding it: WalkClientState reads the roots a
// page at a time and each value's slices one by one, so a reader holds at
// most a page of small values or one slice, whatever the namespace's size
// (issue 22 §2: the answer was built whole, and ten unread answers of a
// 30 MiB namespace took the server to 2.4 GB). No transaction is held
// across the walk: a reader as slow as its client would keep SQLite's WAL
// from ever being checkpointed away. Each value is still whole or left out
// (its slices must match its root); a value rewritten between the page and
// its slices is read again, and one that changes while its text is being
// read ends the walk with ErrStateChanged.

// ErrStateChanged reports a value that changed while WalkClientState was
// reading it.
var ErrStateChanged = errors.New("store: a client-state value changed while it was read")

const (
	// statePageRows is how many roots one query reads.
	statePageRows = 64
	// stateInlineBytes is the longest stored root a page carries; a longer
	// one (a sealed value of up to StateSliceBytes) is read alone, so a page
	// holds at most statePageRows × stateInlineBytes of values.
	stateInlineBytes = 4096
)

// StateValueText yields a value's text in pieces, in order, each cut on a
// code-point boundary; it stops at the first error yield returns, and
// returns ErrStateChanged when the value changed since the walk found it.
type StateValueText func(yield func(piece []byte) error) error

// WalkClientState calls visit with each of userID's values in namespace, in
// key order, as ClientState returns them: a chunked value whose slices are
// missing, stale or undecryptable is left out, and so is a row that does not
// decrypt (logged). It stops at the first error visit returns. The
// namespace rules are ClientState's.
func (s *Store) WalkClientState(ctx context.Context, userID, namespace string, visit func(key string, updatedAt int64, text StateValueText) error) error {
	switch {
	case push.IsJSBlank(namespace):
		return fmt.Errorf("store: client state: %w", ErrStateNameBlank)
	case strings.ContainsFunc(namespace, isStateControl):
		return fmt.Errorf("store: client state: %w", ErrStateNameReserved)
	}
	w := stateWalk{s: s, ctx: ctx, userID: userID, namespace: namespace}
	after := "" // keys are never blank
	for {
		page, err := w.page(after)
		if err != nil {
			return fmt.Errorf("store: client state: %w", err)
		}
		for _, root := range page {
			root, text, ok, err := w.value(root)
			if err != nil {
				return fmt.Errorf("store: client state: %w", err)
			}
			if ok {
				if err := visit(root.key, root.updatedAt, text); err != nil {
					return err
				}
			}
		}
		if len(page) < statePageRows {
			return nil
		}
		after = page[len(page)-1].key
	}
}

type stateWalk struct {
	s                 *Store
	ctx               context.Context
	userID, namespace string
}

// stateRoot is a root row as a page lists it: value is empty when the row
// was too long to carry (see stateInlineBytes).
type stateRoot struct {
	key, value string
	updatedAt  int64
}

func (w stateWalk) page(after string) ([]stateRoot, error) {
	rows, err := w.s.reader.QueryContext(w.ctx, `SELECT key, updated_at, CASE WHEN length(value) <= ? THEN value END
		FROM client_state WHERE user_id = ? AND namespace = ? AND key > ? ORDER BY key LIMIT ?`,
		stateInlineBytes, w.userID, w.namespace, after, statePageRows)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	page := make([]stateRoot, 0, statePageRows)
	for rows.Next() {
		var r stateRoot
		var value sql.NullString
		if err := rows.Scan(&r.key, &r.updatedAt, &value); err != nil {
			return nil, err
		}
		r.value = value.String
		page = append(page, r)
	}
	return page, rows.Err()
}

// value checks root's value and returns its text, and the root as it was
// read (a value too long for the page, or replaced while it was checked, is
// read again); ok is false when it is to be left out.
func (w stateWalk) value(root stateRoot) (stateRoot, StateValueText, bool, error) {
	for range 3 {
		if root.value == "" { // too long for the page, or replaced: read the root alone
			var ok bool
			var err error
			if root, ok, err = w.root(root.key); !ok || err != nil {
				return root, nil, false, err // deleted since the page
			}
		}
		count, chunked := stateRootCount(root.value)
		if !chunked {
			plaintext, err := w.s.userKey(w.userID).OpenAtRest(root.value)
			if err != nil {
				w.s.log.Warn("store: skipping a client-state value that does not decrypt", "userId", w.userID, "namespace", w.namespace, "err", err)
				return root, nil, false, nil
			}
			return root, func(yield func([]byte) error) error { return yield(plaintext) }, true, nil
		}
		text, complete, err := w.chunked(root, count)
		if complete || err != nil {
			return root, text, complete, err
		}
		// An incomplete slice set is a write cut short, or a rewrite that
		// landed since the page: only the first is left out.
		now, ok, err := w.root(root.key)
		if !ok || err != nil || now == root {
			return root, nil, false, err
		}
		root.value = ""
	}
	return root, nil, false, ErrStateChanged
}

// root reads the root row of key; ok is false when there is none.
func (w stateWalk) root(key string) (stateRoot, bool, error) {
	r := stateRoot{key: key}
	err := w.s.reader.QueryRowContext(w.ctx, `SELECT value, updated_at FROM client_state
		WHERE user_id = ? AND namespace = ? AND key = ?`, w.userID, w.namespace, key).Scan(&r.value, &r.updatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	return r, err == nil, err
}

// chunked checks that every slice of a chunked value is there, carries its
// root's updated_at and decrypts, and returns the value's text, which reads
// the slices again one at a time.
func (w stateWalk) chunked(root stateRoot, count int) (StateValueText, bool, error) {
	prefix := root.key + stateSep
	rows, err := w.s.reader.QueryContext(w.ctx, `SELECT key, updated_at FROM client_state
		WHERE user_id = ? AND namespace = ? AND key > ? AND key < ?`,
		w.userID, stateChunkNSPfx+w.namespace, prefix, root.key+stateSliceKeyStop)
	if err != nil {
		return nil, false, err
	}
	found := 0
	for rows.Next() {
		var key string
		var updatedAt int64
		if err := rows.Scan(&key, &updatedAt); err != nil {
			rows.Close()
			return nil, false, err
		}
		// Each of the count keys can match only once, so found == count
		// means all are there; a forged count allocates nothing.
		if i, err := strconv.Atoi(strings.TrimPrefix(key, prefix)); err == nil && i >= 0 && i < count &&
			key == prefix+strconv.Itoa(i) && updatedAt == root.updatedAt {
			found++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || found != count {
		return nil, false, err
	}
	text := func(yield func([]byte) error) error {
		for i := range count {
			piece, err := w.slice(root, prefix+strconv.Itoa(i))
			if err != nil {
				return err
			}
			if err := yield(piece); err != nil {
				return err
			}
		}
		return nil
	}
	switch err := text(func([]byte) error { return nil }); {
	case errors.Is(err, ErrStateChanged):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return text, true, nil
}

// slice reads and opens one slice of root's value: ErrStateChanged when it
// is gone, stale or does not decrypt.
func (w stateWalk) slice(root stateRoot, key string) ([]byte, error) {
	var sealed string
	err := w.s.reader.QueryRowContext(w.ctx, `SELECT value FROM client_state
		WHERE user_id = ? AND namespace = ? AND key = ? AND updated_at = ?`,
		w.userID, stateChunkNSPfx+w.namespace, key, root.updatedAt).Scan(&sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrStateChanged
	}
	if err != nil {
		return nil, err
	}
	plaintext, err := w.s.userKey(w.userID).OpenAtRest(sealed)
	if err != nil {
		w.s.log.Warn("store: a slice of a chunked client-state value does not decrypt", "userId", w.userID, "namespace", w.namespace, "err", err)
		return nil, fmt.Errorf("%w: %v", ErrStateChanged, err)
	}
	return plaintext, nil
}
