package api

import (
	"path/filepath"
	"testing"

	"amsg/store"
	"amsg/store/storetest"
)

// onBothBackends runs f with a fresh store opened with cfg on SQLite, then
// on PostgreSQL (a schema of AMSG_TEST_DATABASE_URL; skipped without it,
// failed in CI).
func onBothBackends(t *testing.T, cfg store.Config, f func(t *testing.T, st *store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		cfg := cfg
		cfg.Path = filepath.Join(t.TempDir(), "amsg.db")
		f(t, storetest.Open(t, cfg))
	})
	t.Run("postgres", func(t *testing.T) {
		cfg := cfg
		cfg.DatabaseURL = storetest.DatabaseURL(t)
		f(t, storetest.Open(t, cfg))
	})
}
