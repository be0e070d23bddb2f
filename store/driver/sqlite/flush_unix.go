//go:build unix

package sqlite

import (
	"errors"
	"os"
)

// openForFlush opens the database file to flush it: read-only, which is
// enough for fsync here.
func openForFlush(path string) (*os.File, error) { return os.Open(path) }

// flushFiles flushes the WAL, then the database file, to the disk. The
// WAL is opened for it: SQLite holds no locks on it (they are on the -shm
// file), so closing the descriptor drops none.
func (db *DB) flushFiles() {
	wal, err := os.Open(db.walPath())
	if err == nil {
		err = errors.Join(wal.Sync(), wal.Close())
	} else if errors.Is(err, os.ErrNotExist) {
		err = nil // nothing written yet
	}
	if err = errors.Join(err, db.file.Sync()); err != nil {
		db.log.Warn("store: flushing the database files failed", "err", err)
	}
}
