package sqlite

// Steps of the schema that change only PostgreSQL's: SQLite runs a
// statement that does nothing, so both dialects keep the same versions.

// claimHOTSchema: PostgreSQL's claim leaves every index alone (its
// driver's claimHOTSchema); SQLite's tasks_due keeps the lease in its
// expression.
const claimHOTSchema = `SELECT 1`

// outboxBytewiseSchema: SQLite's outbox already finds a burst on its
// (user_id, message_id) index, which compares bytes (its driver's
// outboxBurstSchema); PostgreSQL's now does too.
const outboxBytewiseSchema = `SELECT 1`

// timeRangesSchema: PostgreSQL's time indexes become block-range indexes;
// SQLite has none, and keeps its B-trees.
const timeRangesSchema = `SELECT 1`

// wakeUpsSchema: PostgreSQL's wake-ups carry the task's claimable instant
// and its next-claimable lookup reads fewer rows; SQLite's one process
// wakes itself.
const wakeUpsSchema = `SELECT 1`
