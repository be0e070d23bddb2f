package sqlite

// claimHOTSchema: PostgreSQL's claim leaves every index alone (its
// driver's claimHOTSchema); SQLite's tasks_due keeps the lease in its
// expression, so this step changes nothing and keeps both dialects'
// schema versions alike.
const claimHOTSchema = `SELECT 1`
