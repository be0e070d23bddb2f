package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// ClaimSQL is the claim as the store runs it (the dialect's plan setting
// and statement), for the test of PostgreSQL's claim.
func (s *Store) ClaimSQL() (plan, claim string) { return s.dialect.ClaimPlan, s.claimDueSQL() }

// RunMigration runs again the one migration of the store's dialect that
// contains text, on a database a test has put back as the version before
// it had it; later migrations stay as they are.
func (s *Store) RunMigration(ctx context.Context, text string) error {
	for _, m := range s.dialect.Migrations {
		if strings.Contains(m, text) {
			return s.write(ctx, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, m)
				return err
			})
		}
	}
	return fmt.Errorf("no migration contains %q", text)
}

// DialectName is the store's database: "sqlite" or "postgresql".
func (s *Store) DialectName() string { return s.dialect.Name }

// SearchRows runs the rowid search of timeorder.go on table's column in q,
// for the test of the search alone.
func SearchRows(ctx context.Context, q *sql.DB, table, column string, x int64, extreme string) (int64, error) {
	return searchRows(ctx, q, appendOrdered{table, column}, x, extreme)
}

// TimeReadsSQL are the statements that read the append-ordered tables by
// time, as SQLite runs them (narrowed to a rowid range), and the search's
// probes, for the test of their plans.
func (s *Store) TimeReadsSQL() map[string]string {
	from, to := rowRange{">=", 1}, rowRange{"<", 1}
	reads := map[string]string{
		"prune attempts":                pruneAttemptsSQL(to),
		"failed attempts":               `SELECT at FROM delivery_log ` + failedAttemptsWhere(from),
		"newest failures":               newestFailuresSQL,
		"attempts per minute":           attemptsPerMinuteSQL(from),
		"unknown subscriptions":         unknownSubscriptionsSQL(from),
		"prune events":                  pruneEventsSQL(to),
		"events per day":                s.eventsPerDaySQL(from),
		"cleanup outbox":                `DELETE FROM message_outbox WHERE ` + agedOutboxWhere(to),
		"cleanup outbox events":         outboxEventsDeletes(agedOutboxWhere(to))[0],
		"cleanup outbox events, no row": outboxEventsDeletes(agedOutboxWhere(to))[1],
	}
	for _, t := range appendOrderedSets {
		reads["probe "+t.table] = probeSQL(t, "max")
		reads["bounds "+t.table] = boundsSQL(t)
	}
	return reads
}

// TasksPageSQL and PendingTasksSQL are the reads of a user's tasks, for the
// test of PostgreSQL's plans.
func TasksPageSQL(statuses int) string { return tasksPageSQL(statuses) }

var PendingTasksSQL = pendingTasksSQL
