package store_test

import (
	"os"
	"path/filepath"
	"testing"

	"amsg/store"
	"amsg/store/storetest"
)

// Finding 9: the health check said OK with the database deleted or
// corrupt. The probe sees the file as it is now.
func TestProbe(t *testing.T) {
	for _, tt := range []struct {
		name    string
		breakIt func(t *testing.T, path string)
	}{
		{"deleted", func(t *testing.T, path string) {
			for _, f := range []string{path, path + "-wal", path + "-shm"} {
				if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			}
		}},
		{"corrupt", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte("this is not an SQLite file, not at all"), 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"read-only", func(t *testing.T, path string) {
			if os.Geteuid() == 0 {
				t.Skip("root writes read-only files")
			}
			for _, f := range []string{path, path + "-wal", path + "-shm"} {
				if err := os.Chmod(f, 0o400); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "amsg.db")
			st, err := store.Open(t.Context(), store.Config{Path: path, GenerateVAPID: storetest.GenerateVAPID})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() }) // fails on the broken file
			if err := st.Probe(t.Context()); err != nil {
				t.Fatalf("healthy store: %v", err)
			}
			// What the store wrote so far is in the file itself.
			if _, err := rawDB(t, path).Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				t.Fatal(err)
			}
			tt.breakIt(t, path)
			if err := st.Probe(t.Context()); err == nil {
				t.Fatal("the probe passed")
			}
		})
	}
}
