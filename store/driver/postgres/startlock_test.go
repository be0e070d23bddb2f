package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// logRecords is a slog handler that hands each record's message and
// attributes to a channel: the test waits on it instead of on time.
type logRecords chan string

func (h logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h logRecords) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h logRecords) WithGroup(string) slog.Handler            { return h }
func (h logRecords) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	h <- b.String()
	return nil
}

// A session waiting for a lock another holds says, every wait, which
// session holds it, and takes the lock once it is released: in a
// transaction (poll-only's start lock) and on a session.
func TestWaitingForALockNamesItsHolder(t *testing.T) {
	db, err := Open(t.Context(), testDatabaseURL(t), "", "", slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := fmt.Sprintf("startlock-test-%d", time.Now().UnixNano())
	for _, inTx := range []bool{false, true} {
		t.Run(fmt.Sprintf("in transaction %v", inTx), func(t *testing.T) {
			holder, err := db.session.Conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			var holderPID int
			if err := holder.QueryRowContext(t.Context(), `SELECT pg_backend_pid()`).Scan(&holderPID); err != nil {
				t.Fatal(err)
			}
			if _, err := holder.ExecContext(t.Context(), `SELECT pg_advisory_lock(`+lockKey+`)`, name); err != nil {
				t.Fatal(err)
			}

			waiter, err := db.session.Conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer waiter.Close()
			var q execer = waiter
			lock := `SELECT pg_advisory_lock(` + lockKey + `)`
			if inTx {
				tx, err := waiter.BeginTx(t.Context(), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				q, lock = tx, `SELECT pg_advisory_xact_lock(`+lockKey+`)`
			}
			records := make(logRecords, 16)
			done := make(chan error, 1)
			go func() {
				done <- lockPatiently(t.Context(), slog.New(records), q, inTx, lock, name, 20*time.Millisecond)
			}()
			for range 2 { // it keeps waiting, and says so each time
				record := <-records
				if !strings.Contains(record, "still waiting") || !strings.Contains(record, fmt.Sprintf("pid %d ", holderPID)) {
					t.Fatalf("log %q does not name the holder, pid %d", record, holderPID)
				}
			}
			if _, err := holder.ExecContext(t.Context(), `SELECT pg_advisory_unlock(`+lockKey+`)`, name); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("lockPatiently: %v", err)
			}
			// The waiter holds the lock now: the former holder cannot take it.
			var got bool
			if err := holder.QueryRowContext(t.Context(), `SELECT pg_try_advisory_lock(`+lockKey+`)`, name).Scan(&got); err != nil || got {
				t.Fatalf("former holder took the lock the waiter holds: %v %v", got, err)
			}
			// A session's lock timeout is back to the server's.
			var timeout string
			if err := q.(interface {
				QueryRowContext(context.Context, string, ...any) *sql.Row
			}).QueryRowContext(t.Context(), `SHOW lock_timeout`).Scan(&timeout); err != nil {
				t.Fatal(err)
			}
			want := "20ms" // SET LOCAL lasts as long as the transaction
			if !inTx {
				if err := holder.QueryRowContext(t.Context(), `SHOW lock_timeout`).Scan(&want); err != nil {
					t.Fatal(err)
				}
			}
			if timeout != want {
				t.Errorf("lock_timeout after the lock %q, want %q", timeout, want)
			}
			if !inTx {
				if _, err := waiter.ExecContext(t.Context(), `SELECT pg_advisory_unlock(`+lockKey+`)`, name); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
