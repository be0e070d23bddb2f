package postgres

import (
	"context"
	"log/slog"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// testDatabaseURL is the development server of AMSG_TEST_DATABASE_URL.
func testDatabaseURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("AMSG_TEST_DATABASE_URL")
	if u == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("AMSG_TEST_DATABASE_URL is not set, and CI must run the PostgreSQL tests")
		}
		t.Skip("AMSG_TEST_DATABASE_URL is not set")
	}
	return u
}

// synchronousCommit is the setting of a connection of db's pool.
func synchronousCommit(t *testing.T, db *DB) string {
	t.Helper()
	var value string
	if err := db.pool.QueryRowContext(t.Context(), `SHOW synchronous_commit`).Scan(&value); err != nil {
		t.Fatal(err)
	}
	return value
}

func TestCommitsWaitForTheLocalFlushOnlyWhereTheServerSaysOff(t *testing.T) {
	base := testDatabaseURL(t)
	config, err := pgx.ParseConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(t.Context(), config)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// The session stands for a server configured each way.
	for _, c := range []struct{ server, want string }{
		{"off", "local"},
		{"local", "local"},
		{"on", "on"},
		{"remote_write", "remote_write"},
		{"remote_apply", "remote_apply"},
	} {
		if _, err := conn.Exec(t.Context(), `SET synchronous_commit = `+c.server); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(t.Context(), localFlushSQL); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := conn.QueryRow(t.Context(), `SHOW synchronous_commit`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("server %s: synchronous_commit %s, want %s", c.server, got, c.want)
		}
	}
	var server string
	if err := conn.QueryRow(t.Context(), `SELECT reset_val FROM pg_settings WHERE name = 'synchronous_commit'`).Scan(&server); err != nil {
		t.Fatal(err)
	}

	// The store's own pool: raised where the server says off.
	db, err := Open(t.Context(), base, "", "", slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := server
	if server == "off" {
		want = "local"
	}
	if got := synchronousCommit(t, db); got != want {
		t.Errorf("server %s: the pool's synchronous_commit is %s, want %s", server, got, want)
	}

	// A URL that chooses keeps its choice.
	for _, param := range []string{"synchronous_commit=off", "options=-c%20synchronous_commit%3Doff"} {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += param
		chosen, err := Open(t.Context(), u.String(), "", "", slog.Default())
		if err != nil {
			t.Fatal(err)
		}
		if got := synchronousCommit(t, chosen); got != "off" {
			t.Errorf("URL with %s: synchronous_commit %s, want off", param, got)
		}
		chosen.Close()
	}
}
