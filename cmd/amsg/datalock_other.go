//go:build !unix

package main

import (
	"fmt"
	"os"
)

// lockDataDir cannot lock on this platform; see the unix version.
func lockDataDir(dir string) (*os.File, error) {
	return nil, fmt.Errorf("%w: %s: file locks are not supported on this platform", errNoDataDirLock, dir)
}
