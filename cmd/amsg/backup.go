package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"amsg/store"
)

// runBackup is `amsg backup [--data-dir DIR] FILE`: an online, consistent
// copy of the SQLite database, safe while `amsg serve` runs.
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := commandFlags("amsg backup", "Usage: amsg backup [--data-dir DIR] FILE\n\nWrites a consistent copy of the SQLite database to FILE (which must not exist),\nwhile the server keeps running. The copy holds the master key: keep it as safe as the data directory.\nTo restore, stop the server and run amsg restore FILE.", stderr)
	dir, status, ok := parseDataDirAndFile(fs, args, getenv, stderr, "back it up with pg_dump")
	if !ok {
		return status
	}
	if err := store.Backup(ctx, store.Config{Path: filepath.Join(dir, "amsg.db")}, fs.Arg(0)); err != nil {
		fmt.Fprintf(stderr, "amsg backup: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s\n", fs.Arg(0))
	return 0
}

// parseDataDirAndFile parses the arguments of a command on the SQLite
// database, `[--data-dir DIR] FILE`, and gives the data directory; FILE is
// fs.Arg(0). A PostgreSQL deployment is refused with postgresHint, the tool
// to use instead. ok is false when the command must end with status.
func parseDataDirAndFile(fs *flag.FlagSet, args []string, getenv func(string) string, stderr io.Writer, postgresHint string) (dir string, status int, ok bool) {
	dataDir := fs.String("data-dir", "", "data directory of the server (env AMSG_DATA_DIR, default ./amsg-data)")
	if status, done := parseFlags(fs, args); done {
		return "", status, false
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return "", 2, false
	}
	if store.IsPostgresURL(getenv(envName("database-url"))) {
		fmt.Fprintf(stderr, "%s: the database is PostgreSQL (AMSG_DATABASE_URL); %s\n", fs.Name(), postgresHint)
		return "", 2, false
	}
	return cmp.Or(*dataDir, getenv(envName("data-dir")), "./amsg-data"), 0, true
}
