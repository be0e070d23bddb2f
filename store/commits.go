package store

// Commits is how many write transactions the store has committed, each
// holding one write or a group of them: the benchmarks divide it by the
// pushes to tell how well writes are grouped (on PostgreSQL,
// pg_stat_database's xact_commit also counts reads and other processes).
func (s *Store) Commits() uint64 { return s.db.Commits() }
