package main

import (
	"bufio"
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
	"strings"

	"amsg/store"
)

// runMigrate copies a SQLite data directory into an empty PostgreSQL
// database: `amsg migrate --from <data dir> --to postgres://…`. --from
// defaults to AMSG_DATA_DIR and --to to AMSG_DATABASE_URL, serve's twins, so
// the URL and its password need not show in a process listing. The keys go
// with the data: a master key the directory keeps is kept by the database,
// so the instances start with AMSG_DATABASE_URL alone; with
// --keep-master-key-outside the database keeps only its check value, and the
// copy waits until the operator says the printed key is saved. A directory
// that keeps only the check value needs AMSG_MASTER_KEY(_FILE). The data
// directory is locked for the copy: stop amsg first.
func runMigrate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("amsg migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", getenv(envName("data-dir")), "the SQLite data directory to copy (default $AMSG_DATA_DIR)")
	to := fs.String("to", getenv(envName("database-url")), "the empty PostgreSQL database, postgres://… (default $AMSG_DATABASE_URL)")
	outside := fs.Bool("keep-master-key-outside", false,
		"the database keeps only the master key's check value: print the key to set as AMSG_MASTER_KEY and copy once told it is saved")
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
	case !store.IsPostgresURL(*to):
		fmt.Fprintln(stderr, "amsg migrate: --to must be a postgres:// or postgresql:// URL")
		return 2
	}
	m := migration{from: *from, to: *to, getenv: getenv, log: slog.New(slog.NewTextHandler(stderr, nil))}
	if *outside {
		m.confirmKeySaved = func(masterKey string) error { return confirmKeySaved(masterKey, stdin, stdout, stderr) }
	}
	copied, err := m.run(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "amsg migrate: %v\n", err)
		return 1
	}
	for _, table := range slices.Sorted(maps.Keys(copied)) {
		fmt.Fprintf(stdout, "%s: %d rows\n", table, copied[table])
	}
	return 0
}

// errKeyNotSaved: the operator did not confirm the master key is saved, so
// nothing was copied.
var errKeyNotSaved = errors.New(`the master key was not confirmed saved (answer "yes"); nothing was copied`)

// confirmKeySaved prints the environment line the instances need and waits
// for "yes" on stdin: a database that keeps only the check value is
// unreadable without the key.
func confirmKeySaved(masterKey string, stdin io.Reader, stdout, stderr io.Writer) error {
	fmt.Fprintf(stdout, "AMSG_MASTER_KEY=%s\n", masterKey)
	fmt.Fprintln(stderr, "Set the line above (or AMSG_MASTER_KEY_FILE naming a file that holds the key) for every instance:\n"+
		"the database will keep only the key's check value, and nothing can read its data without the key.\n"+
		`Type "yes" once the key is saved:`)
	answer, err := bufio.NewReader(io.LimitReader(stdin, 64)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if strings.TrimSpace(answer) != "yes" {
		return errKeyNotSaved
	}
	return nil
}

// migration is one run of amsg migrate.
type migration struct {
	from, to string
	getenv   func(string) string
	log      *slog.Logger
	// confirmKeySaved, when set, keeps the master key outside the
	// destination; it returns nil once the operator has saved the key.
	confirmKeySaved func(masterKey string) error
}

// run opens the data directory (locked, never created) with the keys it
// keeps, then the database with the same keys kept the same way, and
// copies.
func (m migration) run(ctx context.Context) (map[string]int, error) {
	path := filepath.Join(m.from, "amsg.db")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	dataLock, err := lockDataDir(m.from)
	if err != nil && !errors.Is(err, errNoDataDirLock) {
		return nil, err
	}
	defer closeFile(dataLock)
	src, err := openKeepingKeys(ctx, store.Config{Path: path, Logger: m.log}, m.getenv)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	sec := src.Secrets()
	storeKey := src.MasterKeyStored()
	if m.confirmKeySaved != nil {
		if err := m.confirmKeySaved(sec.MasterKey); err != nil {
			return nil, err
		}
		storeKey = false
	}
	dst, err := store.Open(ctx, store.Config{DatabaseURL: m.to, MasterKey: sec.MasterKey, StoreMasterKey: storeKey,
		VAPIDPublicKey: sec.VAPIDPublicKey, VAPIDPrivateKey: sec.VAPIDPrivateKey, Logger: m.log})
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	return src.CopyTo(ctx, dst)
}

// openKeepingKeys opens an existing database with the keys it keeps, and
// only when it keeps just the master key's check value with
// AMSG_MASTER_KEY(_FILE): giving a key to a database that keeps its own
// would make it drop the key.
func openKeepingKeys(ctx context.Context, cfg store.Config, getenv func(string) string) (*store.Store, error) {
	st, err := store.Open(ctx, cfg)
	if !errors.Is(err, store.ErrMasterKeyRequired) {
		return st, err
	}
	if cfg.MasterKey, err = secretFromEnv(getenv, "AMSG_MASTER_KEY"); err != nil {
		return nil, err
	}
	if cfg.MasterKey == "" {
		return nil, store.ErrMasterKeyRequired
	}
	return store.Open(ctx, cfg)
}
