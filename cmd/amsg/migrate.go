package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"amsg/store"
	"amsg/store/driver/postgres"
)

// runMigrate copies a SQLite data directory into an empty PostgreSQL
// database: `amsg migrate --from <data dir> --to postgres://…`. --from
// defaults to AMSG_DATA_DIR and --to to AMSG_DATABASE_URL, serve's twins, so
// the URL and its password need not show in a process listing; the keys are
// serve's (AMSG_MASTER_KEY, AMSG_VAPID_*), needed when the directory does not
// store them. The data directory is locked for the copy: stop amsg first.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("amsg migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", getenv(envName("data-dir")), "the SQLite data directory to copy (default $AMSG_DATA_DIR)")
	to := fs.String("to", getenv(envName("database-url")), "the empty PostgreSQL database, postgres://… (default $AMSG_DATABASE_URL)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "amsg migrate: unexpected argument %q\n", fs.Arg(0))
		return 2
	case *from == "":
		fmt.Fprintln(stderr, "amsg migrate: --from must name the SQLite data directory")
		return 2
	case !postgres.IsURL(*to):
		fmt.Fprintln(stderr, "amsg migrate: --to must be a postgres:// or postgresql:// URL")
		return 2
	}
	keys := store.Config{MasterKey: getenv("AMSG_MASTER_KEY"),
		VAPIDPublicKey: getenv("AMSG_VAPID_PUBLIC_KEY"), VAPIDPrivateKey: getenv("AMSG_VAPID_PRIVATE_KEY")}
	copied, err := migrateData(ctx, *from, *to, keys, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		fmt.Fprintf(stderr, "amsg migrate: %v\n", err)
		return 1
	}
	for _, table := range slices.Sorted(maps.Keys(copied)) {
		fmt.Fprintf(stdout, "%s: %d rows\n", table, copied[table])
	}
	return 0
}

// migrateData opens the data directory (locked, never created) with the
// keys the server runs with (those of the environment, where the directory
// keeps only the master key's check value), then the database with the same
// keys, and copies.
func migrateData(ctx context.Context, dir, url string, keys store.Config, log *slog.Logger) (map[string]int, error) {
	path := filepath.Join(dir, "amsg.db")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	dataLock, err := lockDataDir(dir)
	if err != nil && !errors.Is(err, errNoDataDirLock) {
		return nil, err
	}
	defer closeFile(dataLock)
	keys.Path, keys.Logger = path, log
	src, err := store.Open(ctx, keys)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	sec := src.Secrets()
	dst, err := store.Open(ctx, store.Config{DatabaseURL: url, MasterKey: sec.MasterKey,
		VAPIDPublicKey: sec.VAPIDPublicKey, VAPIDPrivateKey: sec.VAPIDPrivateKey, Logger: log})
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	return src.CopyTo(ctx, dst)
}
