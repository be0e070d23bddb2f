package store_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"amsg/store"
	"amsg/store/driver"
	"amsg/store/driver/postgres"
	"amsg/store/driver/sqlite"
	"amsg/store/storetest"
)

// openBeforeOutboxBytes creates a database whose schema stops just before
// the outbox's payload became bytes, and returns it raw with the Config
// that opens (and so migrates) it.
func openBeforeOutboxBytes(t *testing.T) (*sql.DB, store.Config) {
	t.Helper()
	return openBefore(t, "message_outbox_bytes", "TYPE BYTEA")
}

// openBefore creates a database whose schema stops just before the
// migration that holds sqliteMarker (PostgreSQL: postgresMarker), and
// returns it raw with the Config that opens (and so migrates) it.
func openBefore(t *testing.T, sqliteMarker, postgresMarker string) (*sql.DB, store.Config) {
	t.Helper()
	path, url := storetest.Database(t)
	dialect, driverName, dsn, converts := (*sqlite.DB)(nil).Dialect(), "sqlite", "file:"+path, sqliteMarker
	if url != "" {
		dialect, driverName, dsn, converts = (*postgres.DB)(nil).Dialect(), "pgx", url, postgresMarker
	}
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	before := stepBefore(t, dialect, converts)
	if _, err := db.Exec(`CREATE TABLE schema_version (version INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for i, m := range dialect.Migrations[:before] {
		if _, err := db.Exec(m); err != nil {
			t.Fatalf("migration %d: %v", i+1, err)
		}
	}
	if _, err := db.Exec(fmt.Sprintf(`INSERT INTO schema_version (version) VALUES (%d)`, before)); err != nil {
		t.Fatal(err)
	}
	return db, store.Config{Path: path, DatabaseURL: url}
}

// stepBefore is the number of migrations before the one whose text holds
// marker (no number is asserted: branches append steps).
func stepBefore(t *testing.T, dialect *driver.Dialect, marker string) int {
	t.Helper()
	for i, m := range dialect.Migrations {
		if strings.Contains(m, marker) {
			return i
		}
	}
	t.Fatalf("no migration holds %q", marker)
	return 0
}

// Rows stored as the standard's hex text before the upgrade read the same
// afterwards, a row that did not open is still skipped, the ids go on from
// where they were (a client's /messages cursor), and the inventory reports
// the size it reported before.
func TestOutboxHexRowsSurviveTheMigrationToBytes(t *testing.T) {
	db, cfg := openBeforeOutboxBytes(t)
	m1, m3 := outboxMessage("m1", 1), outboxMessage("m3", 3)
	sealed := userKey(t, alice).SealAtRest(m1.Payload)
	for _, row := range []struct{ id, payload string }{
		{"m1", sealed}, {"bad", "not:hex:at-all"}, {"m3", userKey(t, alice).SealAtRest(m3.Payload)},
	} {
		if _, err := db.Exec(fmt.Sprintf(`INSERT INTO message_outbox (user_id, message_id, task_uuid, payload, created_at, delivered_at)
			VALUES ('%s', '%s', 'task-1', '%s', 1000, 1000)`, alice, row.id, row.payload)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`DELETE FROM message_outbox WHERE message_id = 'm3'`); err != nil {
		t.Fatal(err)
	}
	st := storetest.Open(t, cfg)

	page := unacked(t, st, alice, 0, 10)
	if messageIDs(page) != "m1" || string(page.Entries[0].Payload) != string(m1.Payload) || page.Cursor != 2 {
		t.Fatalf("after the migration: %s payload %s cursor %d; want m1 with its payload, the bad row skipped (cursor 2)",
			messageIDs(page), page.Entries[0].Payload, page.Cursor)
	}
	appendOutbox(t, st, alice, outboxMessage("m4", 4))
	if next := unacked(t, st, alice, page.Cursor, 10); messageIDs(next) != "m4" || next.Entries[0].ID <= 3 {
		t.Errorf("a push after the migration = %s id %d; want m4 above the deleted m3's id 3", messageIDs(next), next.Entries[0].ID)
	}
	inv, err := st.CloudInventory(t.Context(), alice)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range inv.Resources {
		if r.Type == "outbox" && r.Label == "m1" && r.ByteSize != int64(len(sealed)) {
			t.Errorf("inventory size of m1 = %d, want %d as the hex text had", r.ByteSize, len(sealed))
		}
	}
}

// A build from before the migration, still running after it, writes its
// hex text into the converted column one row at a time (its batch fails on
// the column's type), and the column keeps the text's bytes: a client's
// /messages still gets that push.
func TestOutboxHexTextAnEarlierBuildWritesAfterTheMigrationReads(t *testing.T) {
	db, cfg := openBeforeOutboxBytes(t)
	st := storetest.Open(t, cfg)
	m := outboxMessage("m1", 1)
	bytesType := "BLOB"
	if cfg.DatabaseURL != "" {
		bytesType = "BYTEA"
	}
	if _, err := db.Exec(fmt.Sprintf(`INSERT INTO message_outbox (user_id, message_id, task_uuid, payload, created_at, delivered_at)
		VALUES ('%s', 'm1', 'task-1', CAST('%s' AS %s), 1000, 1000)`, alice, userKey(t, alice).SealAtRest(m.Payload), bytesType)); err != nil {
		t.Fatal(err)
	}
	page := unacked(t, st, alice, 0, 10)
	if messageIDs(page) != "m1" || string(page.Entries[0].Payload) != string(m.Payload) {
		t.Fatalf("unacked = %s; want m1 with its payload", messageIDs(page))
	}
}

// The payload is stored as iv||tag||ciphertext, half the standard's hex,
// and the inventory still reports the hex text's size.
func TestOutboxStoresThePayloadAsBytes(t *testing.T) {
	st, db := openWithPath(t, store.Config{})
	m := outboxMessage("m1", 1)
	appendOutbox(t, st, alice, m)
	var stored []byte
	if err := db.QueryRow(`SELECT payload FROM message_outbox`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if want := 16 + 16 + len(m.Payload); len(stored) != want {
		t.Errorf("stored payload is %d bytes, want %d (iv, tag, ciphertext)", len(stored), want)
	}
	inv, err := st.CloudInventory(t.Context(), alice)
	if err != nil {
		t.Fatal(err)
	}
	hexLen := int64(len(userKey(t, alice).SealAtRest(m.Payload)))
	found := false
	for _, r := range inv.Resources {
		if r.Type == "outbox" {
			found = true
			if r.ByteSize != hexLen {
				t.Errorf("inventory size = %d, want %d (the standard's hex text)", r.ByteSize, hexLen)
			}
		}
	}
	if !found {
		t.Errorf("no outbox resource in %+v", inv.Resources)
	}
}
