package main

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// A downgrade is refused: an amsg older than the database's schema stops
// at start with one line saying what to do (docs/upgrading.md).
func TestOlderBinaryRefusesANewerSchemaAtStart(t *testing.T) {
	dir := t.TempDir()
	p := startAmsg(t, dir)
	if err := p.Stop(t); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "amsg.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE schema_version SET version = version + 1`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runAmsg(t, []string{"AMSG_DATA_DIR=" + dir, "AMSG_ADDR=127.0.0.1:0"}, "serve")
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 ||
		!strings.Contains(stderr, "newer than this amsg understands: run the newer amsg, or restore a backup taken before the upgrade") {
		t.Errorf("serve on a newer schema: exit %d, want 2 and one line\n%s", code, stderr)
	}
}
