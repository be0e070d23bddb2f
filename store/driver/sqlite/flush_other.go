//go:build !unix

package sqlite

import "os"

// openForFlush opens nothing: a file opened read-only cannot be flushed
// on Windows, and one held open would stand in the way of replacing it.
func openForFlush(string) (*os.File, error) { return nil, nil }

// flushFiles leaves the flushes to the checkpoints.
func (db *DB) flushFiles() {}
