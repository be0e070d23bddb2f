package api

import (
	"path/filepath"
	"testing"

	"amsg/store"
	"amsg/store/storetest"
)

// onBothBackends runs f with a fresh store on SQLite, then on PostgreSQL (a
// schema of AMSG_TEST_DATABASE_URL; skipped without it, failed in CI).
func onBothBackends(t *testing.T, f func(t *testing.T, st *store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		f(t, storetest.Open(t, store.Config{Path: filepath.Join(t.TempDir(), "amsg.db")}))
	})
	t.Run("postgres", func(t *testing.T) {
		f(t, storetest.Open(t, store.Config{DatabaseURL: storetest.DatabaseURL(t)}))
	})
}
