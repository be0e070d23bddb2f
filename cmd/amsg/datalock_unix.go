//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDataDir takes an exclusive lock on the data directory's amsg.lock,
// held until the file is closed or the process ends however it ends, so a
// second amsg on the same directory refuses to start. Two would not
// deliver a task twice (claims carry leases), but the agent loop takes
// over a /continue claim made before the process started, which is only
// right when the process is the database's one writer.
func lockDataDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "amsg.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return f, nil
	}
	f.Close()
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, fmt.Errorf("data directory %s is in use by another amsg process", dir)
	}
	// Some network file systems have no locks.
	return nil, fmt.Errorf("%w: %s: %v", errNoDataDirLock, dir, err)
}
