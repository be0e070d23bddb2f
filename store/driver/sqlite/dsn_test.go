package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// Pragmas set with Exec reach one pooled connection; the DSN must give them
// to every connection the pool opens.
func TestDSNAppliesPragmasToEveryConnection(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "amsg #1?.db") // characters a URI must escape
	for _, pool := range []struct {
		name, extra, queryOnly string
	}{
		{"writer", "_txlock=immediate", "0"},
		{"reader", "_pragma=query_only(1)", "1"},
	} {
		t.Run(pool.name, func(t *testing.T) {
			db, err := sql.Open("sqlite", dsn(path, pool.extra))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			want := map[string]string{
				"busy_timeout": "5000", "journal_mode": "wal", "synchronous": "1", "foreign_keys": "1", "temp_store": "2",
				"query_only": pool.queryOnly,
			}
			for i := range 3 { // hold three connections at once so the pool must open three
				conn, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				for pragma, value := range want {
					var got string
					if err := conn.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
						t.Fatal(err)
					}
					if got != value {
						t.Errorf("connection %d: PRAGMA %s = %s, want %s", i, pragma, got, value)
					}
				}
			}
		})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name := e.Name(); name != "amsg #1?.db" && name != "amsg #1?.db-wal" && name != "amsg #1?.db-shm" {
			t.Errorf("unexpected file %q: the path was not escaped in the URI", name)
		}
	}
}

// The writer's page cache holds the leaves a delivery writes into; the
// readers', emptied by every write of another connection, keep SQLite's
// default.
func TestTheWriterHasALargerPageCacheThanTheReaders(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "amsg.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, pool := range []struct {
		name string
		db   *sql.DB
		want int
	}{{"writer", db.writer, -writerCacheKiB}, {"reader", db.reader, -2000}} {
		var got int
		if err := pool.db.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != pool.want {
			t.Errorf("%s: PRAGMA cache_size = %d, want %d", pool.name, got, pool.want)
		}
	}
}
