package store

// Commits is how many transactions the SQLite writer has committed, each
// holding one write or a group of them: the benchmarks divide it by the
// pushes to tell how well writes are grouped. It stays 0 on PostgreSQL,
// whose own count is pg_stat_database's xact_commit.
func (s *Store) Commits() uint64 { return s.commits.Load() }
