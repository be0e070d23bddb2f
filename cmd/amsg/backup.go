package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"path/filepath"

	"amsg/store"
	"amsg/store/driver/postgres"
)

// runBackup is `amsg backup [--data-dir DIR] FILE`: an online, consistent
// copy of the SQLite database, safe while `amsg serve` runs.
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := commandFlags("amsg backup", "Usage: amsg backup [--data-dir DIR] FILE\n\nWrites a consistent copy of the SQLite database to FILE (which must not exist),\nwhile the server keeps running. The copy holds the master key: keep it as safe as the data directory.\nTo restore, stop the server and run amsg restore FILE.", stderr)
	dataDir := fs.String("data-dir", "", "data directory of the server (env AMSG_DATA_DIR, default ./amsg-data)")
	if status, done := parseFlags(fs, args); done {
		return status
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	if postgres.IsURL(getenv(envName("database-url"))) {
		fmt.Fprintln(stderr, "amsg backup: the database is PostgreSQL (AMSG_DATABASE_URL); back it up with pg_dump")
		return 2
	}
	dir := cmp.Or(*dataDir, getenv(envName("data-dir")), "./amsg-data")
	if err := store.Backup(ctx, filepath.Join(dir, "amsg.db"), fs.Arg(0)); err != nil {
		fmt.Fprintf(stderr, "amsg backup: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s\n", fs.Arg(0))
	return 0
}
