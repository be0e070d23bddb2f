package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"amsg/store"
)

// sqliteFiles are the database file and the files SQLite keeps beside it.
// A restore moves all three: a WAL left by a crash would otherwise be
// replayed into the restored file and corrupt it.
var sqliteFiles = []string{"amsg.db", "amsg.db-wal", "amsg.db-shm"}

// runRestore is `amsg restore [--data-dir DIR] FILE`, with the server
// stopped: it checks FILE, moves the current database aside, installs a
// copy of FILE and opens it as the server would, putting the old database
// back if that fails.
func runRestore(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := commandFlags("amsg restore", "Usage: amsg restore [--data-dir DIR] FILE\n\n"+
		"With the server stopped, replaces DIR/amsg.db by a copy of FILE (a file amsg backup wrote): checks that FILE\n"+
		"is an intact amsg database of a schema this amsg can open, moves amsg.db and its -wal and -shm files aside\n"+
		"into DIR/before-restore-<time>/, installs the copy and opens it with the master key the server uses\n"+
		"(AMSG_MASTER_KEY(_FILE), else the stored one). If it does not open, the previous database is put back.", stderr)
	dir, status, ok := parseDataDirAndFile(fs, args, getenv, stderr, "restore it with pg_restore or psql")
	if !ok {
		return status
	}
	masterKey, err := secretFromEnv(getenv, "AMSG_MASTER_KEY")
	if err != nil {
		fmt.Fprintf(stderr, "amsg restore: %v\n", err)
		return 2
	}
	r := restore{dir: dir, masterKey: masterKey,
		log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	version, aside, err := r.run(ctx, fs.Arg(0), time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "amsg restore: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "restored %s (schema version %d) as %s\n", fs.Arg(0), version, filepath.Join(r.dir, "amsg.db"))
	if aside != "" {
		fmt.Fprintf(stdout, "the previous database is in %s\n", aside)
	}
	return 0
}

// restore is one run of amsg restore.
type restore struct {
	dir       string
	masterKey string // given to Open as serve gives it; "" for the stored one
	log       *slog.Logger
}

// run restores backup into the data directory and returns the restored
// schema version and the directory the previous files went to ("" when
// there were none).
func (r restore) run(ctx context.Context, backup string, now time.Time) (version int, aside string, err error) {
	lock, err := lockDataDir(r.dir)
	switch {
	case errors.Is(err, errNoDataDirLock):
		r.log.Warn("cannot lock the data directory: make sure the server is stopped", "err", err)
	case err != nil:
		return 0, "", fmt.Errorf("%w: stop the server first", err)
	}
	defer closeFile(lock)

	staged := filepath.Join(r.dir, "amsg.db.restoring")
	if err := copyNewFile(backup, staged); err != nil {
		return 0, "", err
	}
	if version, err = store.CheckRestorable(ctx, staged); err != nil {
		return 0, "", errors.Join(err, removeSQLiteFiles(staged))
	}
	aside = filepath.Join(r.dir, "before-restore-"+now.UTC().Format("20060102T150405Z"))
	moved, err := moveFiles(r.dir, aside, sqliteFiles)
	if err != nil {
		return 0, "", errors.Join(err, removeSQLiteFiles(staged))
	}
	path := filepath.Join(r.dir, "amsg.db")
	if err := os.Rename(staged, path); err != nil {
		return 0, "", errors.Join(err, r.putBack(aside, moved))
	}
	st, err := store.Open(ctx, store.Config{Path: path, MasterKey: r.masterKey, Logger: r.log})
	if err == nil {
		err = st.Close()
	}
	if err != nil {
		return 0, "", fmt.Errorf("the restored copy does not open, the previous database is back in place: %w",
			errors.Join(err, removeSQLiteFiles(path), r.putBack(aside, moved)))
	}
	if len(moved) == 0 {
		aside = ""
	}
	if err := giveToDataDirOwner(r.dir, path, path+"-wal", path+"-shm", aside); err != nil {
		return 0, "", fmt.Errorf("the copy is in place, but its owner is not the data directory's: %w", err)
	}
	return version, aside, nil
}

// putBack returns the files moved aside to the data directory.
func (r restore) putBack(aside string, moved []string) error {
	if _, err := moveFiles(aside, r.dir, moved); err != nil {
		return fmt.Errorf("putting the previous database back from %s: %w", aside, err)
	}
	return os.Remove(aside)
}

// moveFiles moves those of names that exist from one directory into
// another, created if needed, and returns the ones it moved.
func moveFiles(from, to string, names []string) ([]string, error) {
	var moved []string
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(from, name)); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.MkdirAll(to, 0o700); err != nil {
			return moved, err
		}
		if err := os.Rename(filepath.Join(from, name), filepath.Join(to, name)); err != nil {
			return moved, err
		}
		moved = append(moved, name)
	}
	return moved, nil
}

// removeSQLiteFiles removes a database file and SQLite's files beside it.
func removeSQLiteFiles(path string) error {
	var errs []error
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// copyNewFile copies src to dst, which it creates (readable by its owner
// only: a database holds the keys), replacing a copy an interrupted restore
// left, and syncs it.
func copyNewFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := removeSQLiteFiles(dst); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if err := errors.Join(err, out.Close()); err != nil {
		return errors.Join(err, os.Remove(dst))
	}
	return nil
}
