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

// TasksPageSQL and PendingTasksSQL are the reads of a user's tasks, for the
// test of PostgreSQL's plans.
func TasksPageSQL(statuses int) string { return tasksPageSQL(statuses) }

var PendingTasksSQL = pendingTasksSQL
