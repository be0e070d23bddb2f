package store_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
)

// openWithADevice opens a SQLite store in a file of its own, with alice's
// device in it.
func openWithADevice(t *testing.T) (*store.Store, string, *clock) {
	t.Helper()
	clk := newClock()
	path := filepath.Join(t.TempDir(), "amsg.db")
	st := storetest.Open(t, store.Config{Path: path, Now: clk.Now})
	if _, err := st.PutSubscription(t.Context(), alice, subscriptionJSON("https://push.example.com/a1"), clk.Now()); err != nil {
		t.Fatal(err)
	}
	return st, path, clk
}

// A backup taken while the store is open restores: opened with the same
// master key, it has the same devices, tasks and secrets.
func TestBackupRestores(t *testing.T) {
	st, path, clk := openWithADevice(t)
	ctx := t.Context()
	task := insertTask(t, st, bob, 1, clk.Now().Add(time.Hour))

	dest := filepath.Join(t.TempDir(), "backup.db")
	if err := store.Backup(ctx, store.Config{Path: path}, dest); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(dest); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v, %v; want mode 0600", info, err)
	}
	if err := store.Backup(ctx, store.Config{Path: path}, dest); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("a second backup over the first = %v, want a refusal", err)
	}
	// Written after the backup: not in it.
	if _, err := st.PutSubscription(ctx, bob, subscriptionJSON("https://push.example.com/b1"), clk.Now()); err != nil {
		t.Fatal(err)
	}

	sec := st.Secrets()
	// The VAPID pair comes from the copy; the master key was given, so the
	// copy holds only its check value and the key is given again.
	restored, err := store.Open(ctx, store.Config{Path: dest, MasterKey: sec.MasterKey, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restored.Close() })
	if got := restored.Secrets(); got != sec {
		t.Fatal("the restored database has other secrets")
	}
	if got := endpoints(t, restored, alice); len(got) != 1 || got[0] != "https://push.example.com/a1" {
		t.Fatalf("restored devices of alice = %v", got)
	}
	if got := endpoints(t, restored, bob); len(got) != 0 {
		t.Fatalf("restored devices of bob = %v, want none (registered after the backup)", got)
	}
	back, err := restored.Task(ctx, bob, task.UUID)
	if err != nil || string(back.Payload) != string(task.Payload) {
		t.Fatalf("restored task = %+v, %v", back, err)
	}
}

func TestBackupOfAMissingDatabase(t *testing.T) {
	dir := t.TempDir()
	err := store.Backup(t.Context(), store.Config{Path: filepath.Join(dir, "nope.db")}, filepath.Join(dir, "out.db"))
	if err == nil {
		t.Fatal("backup of a missing database succeeded")
	}
	if _, statErr := os.Stat(filepath.Join(dir, "out.db")); !os.IsNotExist(statErr) {
		t.Fatalf("a failed backup left its file: %v", statErr)
	}
}

// PostgreSQL is copied with its own tools: Backup says so and leaves no
// file behind.
func TestBackupOfPostgreSQLNamesItsTool(t *testing.T) {
	url := storetest.DatabaseURL(t)
	storetest.Open(t, store.Config{DatabaseURL: url})
	dest := filepath.Join(t.TempDir(), "backup.db")
	err := store.Backup(t.Context(), store.Config{DatabaseURL: url}, dest)
	if err == nil || !strings.Contains(err.Error(), "back it up with pg_dump") {
		t.Fatalf("Backup of PostgreSQL = %v, want a refusal naming pg_dump", err)
	}
	if _, statErr := os.Stat(dest); !os.IsNotExist(statErr) {
		t.Fatalf("a refused backup left its file: %v", statErr)
	}
}

// A backup reads beside the server and leaves the server's WAL to it: a
// reader of the server's that holds an older snapshot (a slow client's
// walk) does not make it wait for a checkpoint and fail.
func TestBackupBesideAnOpenRead(t *testing.T) {
	st, path, clk := openWithADevice(t)
	ctx := t.Context()
	read, err := rawDB(t, path).BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer read.Rollback()
	if n := 0; read.QueryRowContext(ctx, `SELECT count(*) FROM subscriptions`).Scan(&n) != nil || n != 1 {
		t.Fatalf("the open read sees %d devices", n)
	}
	if _, err := st.PutSubscription(ctx, bob, subscriptionJSON("https://push.example.com/b1"), clk.Now()); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "backup.db")
	if err := store.Backup(ctx, store.Config{Path: path}, dest); err != nil {
		t.Fatalf("backup beside an open read: %v", err)
	}
	if n := queryInt(t, rawDB(t, dest), `SELECT count(*) FROM subscriptions`); n != 2 {
		t.Errorf("the backup has %d devices, want both", n)
	}
}
