package postgres

// Steps of the schema that change only SQLite's: PostgreSQL runs a
// statement that does nothing, so both dialects keep the same versions.

// appendOrderedSchema: SQLite drops its B-trees by time of the delivery
// log, the message events and the outbox, and reads them by rowid range;
// PostgreSQL keeps its block-range indexes (timeRangesSchema).
const appendOrderedSchema = `SELECT 1`

// claimInPlaceSchema: SQLite's tasks_due leaves the lease out, as
// PostgreSQL's has since claimHOTSchema.
const claimInPlaceSchema = `SELECT 1`
