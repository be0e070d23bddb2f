package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// storageHealth remembers that the disk refused a write (SQLite's FULL or
// IOERR), until a write commits again. While it does, the health probe
// fails unless the WAL can be checkpointed away and a write made from an
// empty WAL: a probe that rewrote a row inside a WAL that still had room
// answered 200 on a full disk (issue 22), and the writer empties the WAL
// before each write so the checkpoint gets its chance before new writes.
type storageHealth struct {
	mu  sync.Mutex
	err error
}

// note records how a commit of the writer ended.
func (h *storageHealth) note(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err == nil:
		h.err = nil
	case diskRefused(err):
		h.err = err
	}
}

// failing is the last write the disk refused, nil if a write committed
// since.
func (h *storageHealth) failing() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// diskRefused reports an error of the disk rather than of the write:
// SQLITE_FULL (13) or SQLITE_IOERR (10) and its extended codes.
func diskRefused(err error) bool {
	var coded interface{ Code() int }
	if !errors.As(err, &coded) {
		return false
	}
	primary := coded.Code() & 0xff
	return primary == 13 || primary == 10
}

// walCeiling is the WAL size past which the writer waits for a TRUNCATE
// checkpoint: maxWALBytes, or a quarter of the free space on the database's
// volume when that is less, so the WAL never grows into the last free
// bytes the checkpoint needs.
func (db *DB) walCeiling() int64 {
	free, ok := freeBytes(filepath.Dir(db.path))
	if !ok {
		return maxWALBytes
	}
	return min(maxWALBytes, free/4)
}

// recoverStorage is the probe's first step while the disk refuses writes:
// the WAL must checkpoint away (TRUNCATE), so the probe's write then needs
// new space.
func (db *DB) recoverStorage(ctx context.Context) error {
	failing := db.disk.failing()
	if failing == nil {
		return nil
	}
	if _, err := db.checkpointer.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return fmt.Errorf("writes fail (%w) and the WAL does not checkpoint: %w", failing, err)
	}
	if info, err := os.Stat(db.walPath()); err == nil && info.Size() > 0 {
		return fmt.Errorf("writes fail (%w) and the WAL could not be emptied (%d bytes)", failing, info.Size())
	}
	return nil
}
