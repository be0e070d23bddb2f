package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
)

// clock is a settable clock for Config.Now.
type clock struct{ now time.Time }

func newClock() *clock               { return &clock{now: time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)} }
func (c *clock) Now() time.Time      { return c.now }
func (c *clock) Add(d time.Duration) { c.now = c.now.Add(d) }

// logBuffer returns a logger at debug level that writes to a buffer.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

// rawDB opens the database file beside the store, to look at rows as stored.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func queryInt(t *testing.T, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestOpenCreatesPrivateWALDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amsg.db")
	st := storetest.Open(t, store.Config{Path: path})
	if err := st.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("database file mode %o, want 600: it holds the master key", perm)
	}
	db := rawDB(t, path)
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	for _, table := range []string{"schema_version", "secrets", "subscriptions", "delivery_log"} {
		if queryInt(t, db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?", table) != 1 {
			t.Errorf("table %s missing", table)
		}
	}
	report, err := st.Schema(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if v := queryInt(t, db, "SELECT version FROM schema_version"); v != report.LatestVersion || v < 3 {
		t.Errorf("schema version %d, want every migration applied (%d)", v, report.LatestVersion)
	}
}

func TestReopenKeepsSchemaAndData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amsg.db")
	ctx := t.Context()
	logger, logs := logBuffer()
	var firstID int64
	for i := range 3 {
		st, err := store.Open(ctx, store.Config{Path: path, MasterKey: storetest.MasterKey, GenerateVAPID: storetest.GenerateVAPID, Logger: logger})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if i == 0 {
			d, err := st.PutSubscription(ctx, "u", subscriptionJSON("https://push.example/1"), time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			firstID = d.ID
		}
		devices, err := st.Devices(ctx, "u")
		if err != nil || len(devices) != 1 || devices[0].ID != firstID {
			t.Fatalf("open %d: devices = %+v, %v; want the one stored on the first open", i, devices, err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logs.String(), "schema migrated"); n != 1 {
		t.Errorf("migrated %d times over three opens, want once:\n%s", n, logs)
	}
	if v := queryInt(t, rawDB(t, path), "SELECT count(*) FROM schema_version"); v != 1 {
		t.Errorf("schema_version has %d rows, want 1", v)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amsg.db")
	storetest.Open(t, store.Config{Path: path}).Close()
	if _, err := rawDB(t, path).Exec("UPDATE schema_version SET version = 99"); err != nil {
		t.Fatal(err)
	}
	_, err := store.Open(t.Context(), store.Config{Path: path, MasterKey: storetest.MasterKey, GenerateVAPID: storetest.GenerateVAPID})
	if !errors.Is(err, store.ErrSchemaNewer) || !strings.Contains(err.Error(), "schema version 99") || !strings.Contains(err.Error(), "run the newer amsg") {
		t.Fatalf("Open = %v, want ErrSchemaNewer naming the version and what to do", err)
	}
	if _, err := store.CheckRestorable(t.Context(), path); !errors.Is(err, store.ErrSchemaNewer) {
		t.Errorf("CheckRestorable of a newer schema = %v, want ErrSchemaNewer", err)
	}
}

func TestOpenFailsClearly(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("this is not a database\n"), 100), 0o600); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"missing directory", filepath.Join(dir, "missing", "amsg.db"), "data directory"},
		{"directory not a directory", filepath.Join(notDir, "amsg.db"), "not a directory"},
		{"path is a directory", dir, "is a directory"},
		{"not a database", garbage, "not a database"},
	}
	if _, err := store.Open(t.Context(), store.Config{}); err == nil || !strings.Contains(err.Error(), "no database path") {
		t.Errorf("Open without a path = %v, want a no-path error", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			st, err := store.Open(ctx, store.Config{Path: tt.path, GenerateVAPID: storetest.GenerateVAPID})
			if err == nil {
				st.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "store: open "+tt.path) {
				t.Fatalf("Open error %q, want it to name the path and say %q", err, tt.want)
			}
		})
	}
	if data, err := os.ReadFile(garbage); err != nil || !bytes.HasPrefix(data, []byte("this is not a database")) {
		t.Errorf("Open changed a file that is not a database")
	}
}

func TestPingFailsAfterClose(t *testing.T) {
	st, err := store.Open(t.Context(), store.Config{
		Path: filepath.Join(t.TempDir(), "amsg.db"), MasterKey: storetest.MasterKey, GenerateVAPID: storetest.GenerateVAPID,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Ping(t.Context()); err != nil {
		t.Fatalf("Ping of an open store: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Ping(t.Context()); err == nil {
		t.Fatal("Ping of a closed store succeeded")
	}
}

func TestOpenHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := store.Open(ctx, store.Config{Path: filepath.Join(t.TempDir(), "amsg.db"), GenerateVAPID: storetest.GenerateVAPID})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Open with a cancelled context = %v, want context.Canceled", err)
	}
}
