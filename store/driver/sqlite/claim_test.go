package sqlite

import (
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"

	msqlite "modernc.org/sqlite"
)

// The prepared claim is compiled once, not again whenever the time or the
// limit it is given changes, also once ANALYZE has left sqlite_stat4 samples
// (PRAGMA optimize does at Close): SQLite plans with a bare parameter's
// value where it can, and then compiles the statement again each time that
// value changes, which was about one claim in twenty in a trickle without
// statistics and every claim with them.
func TestTheClaimIsCompiledOnce(t *testing.T) {
	for _, analyzed := range []bool{false, true} {
		t.Run(fmt.Sprintf("analyzed=%v", analyzed), func(t *testing.T) {
			db, err := Open(t.Context(), filepath.Join(t.TempDir(), "amsg.db"), slog.Default())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			ctx := t.Context()
			for _, step := range dialect.Migrations {
				if _, err := db.Writer().ExecContext(ctx, step); err != nil {
					t.Fatal(err)
				}
			}
			const tasks = 2000
			if err := db.Write(ctx, func(tx *sql.Tx) error {
				for i := range tasks {
					if _, err := tx.Exec(`INSERT INTO tasks (user_id, uuid, payload, message_type, next_send_at, created_at, updated_at)
						VALUES (?, ?, 'x', 'fixed', ?, 0, 0)`, fmt.Sprint("user", i%100), fmt.Sprint(i), i); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if analyzed {
				if _, err := db.Writer().ExecContext(ctx, "ANALYZE"); err != nil {
					t.Fatal(err)
				}
			}
			conn, err := db.Writer().Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var compiles atomic.Int64 // of an UPDATE of tasks: the claim's
			if err := conn.Raw(func(driverConn any) error {
				return driverConn.(msqlite.AuthorizerRegisterer).RegisterAuthorizer(
					func(action msqlite.AuthorizerActionCode, table, column, _, _ string) msqlite.AuthorizerReturnCode {
						if action == msqlite.AuthUpdate && table == "tasks" && column == "lease_until" {
							compiles.Add(1)
						}
						return msqlite.AuthorizerOK
					})
			}); err != nil {
				t.Fatal(err)
			}
			claim, err := conn.PrepareContext(ctx, dialect.ClaimDueTasks+"id")
			if err != nil {
				t.Fatal(err)
			}
			defer claim.Close()
			claimed := 0
			for i := range 100 {
				now := 10 * i
				rows, err := claim.QueryContext(ctx, now+60_000, now, now, "[]", 1+i%7, now)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					claimed++
				}
				if err := rows.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if claimed != 395 { // 1+i%7 a claim, all of them due
				t.Errorf("claimed %d tasks, want 395", claimed)
			}
			if n := compiles.Load(); n != 1 {
				t.Errorf("the claim was compiled %d times in 100 runs, want once", n)
			}
		})
	}
}
