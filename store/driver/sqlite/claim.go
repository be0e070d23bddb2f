package sqlite

// claimInPlaceSchema: tasks_due keys a task by its own time, the latest of
// next_send_at and retry_after, and no longer by its lease (issue 24): a
// claim, a heartbeat's renewal and a release write the task's row alone, where
// each moved its tasks_due entry from one leaf to another (0.55 of the 7.6
// pages a delivered push wrote). The claim checks the lease on the row it
// reads anyway (for the user it may pass over), and a task whose lease ran
// out is claimed in the order of its own time, ahead of tasks due after it
// (see nextClaimableSQL for the instant the scheduler wakes at).
const claimInPlaceSchema = `
DROP INDEX tasks_due;
CREATE INDEX tasks_due ON tasks (` + claimableAt + `, id) WHERE status = 'pending';
`

// nextClaimableSQL is the earliest instant a pending task becomes
// claimable, leases included. The first task without a lease in tasks_due's
// order is claimable at its own time; the tasks before it hold leases (those
// in delivery and claimed ahead, a bounded few) and become claimable when
// theirs ends, if earlier. A task after it is never earlier. Past 1 024
// leased tasks ahead it answers the last one's time, no later than the true
// instant, so the scheduler wakes early rather than late (as PostgreSQL's
// amsg_next_claimable). NULL when no task is pending.
const nextClaimableSQL = `WITH first (at) AS (
		SELECT coalesce(min(at), 9223372036854775807) FROM (SELECT ` + claimableAt + ` AS at FROM tasks
			WHERE status = 'pending' AND lease_until IS NULL ORDER BY ` + claimableAt + `, id LIMIT 1)),
	ahead (at, lease_until) AS (
		SELECT ` + claimableAt + `, lease_until FROM tasks WHERE status = 'pending' AND ` + claimableAt + ` < (SELECT at FROM first)
			ORDER BY ` + claimableAt + `, id LIMIT 1024)
	SELECT nullif(min((SELECT at FROM first), coalesce(CASE WHEN count(*) < 1024 THEN min(max(at, coalesce(lease_until, 0)))
			ELSE min(min(max(at, coalesce(lease_until, 0))), max(at)) END, 9223372036854775807)), 9223372036854775807)
	FROM ahead`
