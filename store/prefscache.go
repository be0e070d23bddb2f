package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"sync"
	"time"
)

// claimedPrefsFresh is how long preferences read with a claim answer
// Preferences for the claimed tasks' users: the occurrences fire within
// it, so each fire does not read them again (on PostgreSQL each read is a
// transaction: issue 24 counts commits per push). A change made through
// this store drops them at once; one made by another instance is seen
// within this time.
const claimedPrefsFresh = time.Second

// claimedPrefs are the preferences of the users whose tasks were claimed
// last, as read in the claim's transaction.
type claimedPrefs struct {
	mu sync.Mutex
	// gen counts changes: a claim that began before one keeps nothing, so a
	// value read before a change never outlives it.
	gen   uint64
	users map[string]claimedPref
}

type claimedPref struct {
	p    Preferences
	read time.Time
}

func (c *claimedPrefs) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put keeps prefs, read at read by a claim that began at generation gen.
func (c *claimedPrefs) put(gen uint64, read time.Time, prefs map[string]Preferences) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.users == nil {
		c.users = make(map[string]claimedPref)
	}
	for id, p := range c.users { // bounded by the users of a second's claims
		if read.Sub(p.read) >= claimedPrefsFresh {
			delete(c.users, id)
		}
	}
	for id, p := range prefs {
		c.users[id] = claimedPref{p: p, read: read}
	}
}

// get returns userID's preferences if a claim read them less than
// claimedPrefsFresh before now.
func (c *claimedPrefs) get(userID string, now time.Time) (Preferences, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.users[userID]
	if !ok || now.Sub(e.read) >= claimedPrefsFresh {
		return Preferences{}, false
	}
	return e.p, true
}

// changed drops userID's preferences and keeps claims under way from
// storing what they read.
func (c *claimedPrefs) changed(userID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.users, userID)
}

// readClaimedPrefs reads, in a claim's transaction, the preferences of the
// users of tasks: every one of them, the zero value for a user who set
// none.
func (s *Store) readClaimedPrefs(ctx context.Context, tx *sql.Tx, tasks []Task) (map[string]Preferences, error) {
	prefs := make(map[string]Preferences, len(tasks))
	ids := make([]string, 0, len(tasks))
	for _, t := range tasks {
		if _, ok := prefs[t.UserID]; !ok {
			prefs[t.UserID] = Preferences{}
			ids = append(ids, t.UserID)
		}
	}
	if len(ids) == 0 {
		return prefs, nil
	}
	users, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.txQuery(ctx, tx, s.claimedPrefsSQL(), string(users))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var userID string
		var p Preferences
		if p, err = scanPreferences(prefixScanner{rows, &userID}); err != nil {
			return nil, err
		}
		prefs[userID] = p
	}
	return prefs, rows.Err()
}

// claimedPrefsSQL reads the preferences of the users a claim took; it is
// prepared at Open with the claim, which runs it every time.
func (s *Store) claimedPrefsSQL() string {
	return `SELECT user_id, time_zone, quiet_start, quiet_end, daily_limit FROM user_preferences
		WHERE user_id IN (` + s.dialect.InJSONArray + `)`
}

// prefixScanner scans a row's first column into first and the rest as
// the row of a narrower query.
type prefixScanner struct {
	rows  *sql.Rows
	first any
}

func (p prefixScanner) Scan(dest ...any) error {
	return p.rows.Scan(append([]any{p.first}, dest...)...)
}
