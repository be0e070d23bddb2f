package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// Environment of the PostgreSQL tests.
const (
	// EnvDatabaseURL is a PostgreSQL database the tests may create schemas
	// in. Unset: the PostgreSQL tests skip, unless EnvCI is set, when they
	// fail.
	EnvDatabaseURL = "AMSG_TEST_DATABASE_URL"
	EnvCI          = "CI"
	// envBackend set to "postgres" makes Open (and so New) open PostgreSQL
	// stores; RunOnPostgres sets it for the second run of a test binary.
	envBackend = "AMSG_TEST_STORE_BACKEND"
)

// DatabaseURL returns the URL of a fresh schema of the test database, which
// is dropped when t ends. Without EnvDatabaseURL it skips t, or fails it
// when EnvCI is set.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvDatabaseURL)
	if base == "" {
		if os.Getenv(EnvCI) != "" {
			t.Fatalf("storetest: %s is not set, and CI must run the PostgreSQL tests", EnvDatabaseURL)
		}
		t.Skipf("storetest: %s is not set", EnvDatabaseURL)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	defer admin.Close()
	var random [8]byte
	_, _ = rand.Read(random[:])
	schema := "t_" + hex.EncodeToString(random[:])
	if _, err := admin.ExecContext(t.Context(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("storetest: create schema: %v", err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err == nil {
			_, err = admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE") // t.Context() has ended
			admin.Close()
		}
		if err != nil {
			t.Errorf("storetest: drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("storetest: %s: %v", EnvDatabaseURL, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// OnPostgres reports whether Open opens PostgreSQL stores (the second
// run of RunOnPostgres), for a test whose expectations differ by backend.
func OnPostgres() bool { return os.Getenv(envBackend) == "postgres" }

// RunOnPostgres runs the test binary once more with every store Open opens
// on PostgreSQL, so one suite of store tests covers both backends; call it
// from TestMain after m.Run passed. It returns the exit code: without
// EnvDatabaseURL 0 (1 when EnvCI is set); in the second run itself, 0.
func RunOnPostgres() int {
	if OnPostgres() {
		return 0
	}
	if os.Getenv(EnvDatabaseURL) == "" {
		if os.Getenv(EnvCI) != "" {
			fmt.Fprintf(os.Stderr, "storetest: %s is not set, and CI must run the PostgreSQL tests\n", EnvDatabaseURL)
			return 1
		}
		return 0
	}
	fmt.Println("=== the same tests on PostgreSQL")
	cmd := exec.Command(os.Args[0], childArgs(os.Args[1:])...)
	cmd.Env = append(os.Environ(), envBackend+"=postgres")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "storetest: PostgreSQL run: %v\n", err)
		return 1
	}
	return 0
}

// childArgs are the test binary's flags less those naming files the first
// run writes (go test's log of what the run read, which its cache keys on,
// and profiles): the second run would overwrite them.
func childArgs(args []string) []string {
	var kept []string
	for _, arg := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if name == "test.testlogfile" || strings.HasSuffix(name, "profile") || name == "test.trace" || name == "test.gocoverdir" {
			continue
		}
		kept = append(kept, arg)
	}
	return kept
}
