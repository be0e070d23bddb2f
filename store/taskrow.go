package store

import "database/sql"

// taskRow is a row of taskColumns as scanTask scans it: Scan takes its
// destinations through an interface, so each would escape to the heap on
// its own; in one struct they are one allocation a row, not ten (a claim
// scans every task it takes: issue 24).
type taskRow struct {
	t                           Task
	sealed, messageType, status string
	next, created, updated      int64
	lease, retry                sql.NullInt64
	lastError                   sql.NullString
}
