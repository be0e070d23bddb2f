package sqlite

// leaseSchema: PostgreSQL's leadership leases behind a transaction pooler
// (its driver's leader_lease.go). SQLite's one process leads without one;
// the table keeps both dialects' schema versions alike.
const leaseSchema = `
CREATE TABLE leader_leases (
	name       TEXT PRIMARY KEY,
	holder     TEXT NOT NULL,
	epoch      INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) STRICT;
`
