package store

import (
	"context"

	"amsg/store/driver"
)

// Commits is how many write transactions the store has committed, each
// holding one write or a group of them: the benchmarks divide it by the
// pushes to tell how well writes are grouped (on PostgreSQL,
// pg_stat_database's xact_commit also counts reads and other processes).
func (s *Store) Commits() uint64 { return s.db.Commits() }

// Unhurried marks the writes made with ctx as records nobody waits on to
// go on, such as a delivered occurrence's completion: such a write waits a
// few milliseconds for company when writes come one by one (in SQLite's
// writer, and in the store's batches on PostgreSQL), so a steady trickle
// of deliveries commits in groups as a burst does.
func Unhurried(ctx context.Context) context.Context { return driver.Unhurried(ctx) }
