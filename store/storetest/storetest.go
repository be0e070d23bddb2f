// Package storetest opens throwaway stores for tests, like net/http/httptest
// does servers: a real database file in t.TempDir() (or a fresh schema of a
// real PostgreSQL database, see RunOnPostgres), fixed keys, closed when the
// test ends.
package storetest

import (
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"amsg/push/webpush"
	"amsg/store"
)

// MasterKey is the master key of every store New opens, so tests can derive
// the user keys a browser would fetch from GET /get-user-key.
const MasterKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// GenerateVAPID makes a VAPID key pair as the server does; it fits
// store.Config.GenerateVAPID.
var GenerateVAPID = webpush.GenerateVAPIDKeys

// vapidPair is one VAPID key pair per test binary: fixed for all its stores.
var vapidPair = sync.OnceValues(func() ([2]string, error) {
	public, private, err := GenerateVAPID()
	return [2]string{public, private}, err
})

// Database names a fresh database for t: a file path in t.TempDir(), or in
// the PostgreSQL run of RunOnPostgres a database URL (the other is "").
func Database(t testing.TB) (path, url string) {
	if OnPostgres() {
		return "", DatabaseURL(t)
	}
	return filepath.Join(t.TempDir(), "amsg.db"), ""
}

// New opens a fresh store with MasterKey and the fixed VAPID pair, logging
// warnings and errors to the test's output; it is closed when the test ends.
func New(t testing.TB) *store.Store {
	return Open(t, store.Config{})
}

// Open is New with cfg as the starting point: an empty Path, MasterKey,
// VAPID pair or Logger is filled in as New does. With neither Path nor
// DatabaseURL, in the PostgreSQL run of RunOnPostgres, the store is a fresh
// schema of the test database.
func Open(t testing.TB, cfg store.Config) *store.Store {
	t.Helper()
	if cfg.Path == "" && cfg.DatabaseURL == "" {
		cfg.Path, cfg.DatabaseURL = Database(t)
	}
	if cfg.MasterKey == "" {
		cfg.MasterKey = MasterKey
	}
	if cfg.VAPIDPublicKey == "" && cfg.VAPIDPrivateKey == "" {
		pair, err := vapidPair()
		if err != nil {
			t.Fatalf("storetest: %v", err)
		}
		cfg.VAPIDPublicKey, cfg.VAPIDPrivateKey = pair[0], pair[1]
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	st, err := store.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("storetest: close: %v", err)
		}
	})
	return st
}
