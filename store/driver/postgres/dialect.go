package postgres

import "amsg/store/driver"

// tasksChannel is the LISTEN/NOTIFY channel of task wake-ups, prefixed by
// the schema so that instances of different deployments sharing a database
// (and the tests, one schema each) do not wake each other.
const tasksChannel = "amsg_tasks"

// cancelPrefix starts the payload of a cancel on tasksChannel, followed by
// the task's id.
const cancelPrefix = "cancel:"

// duePrefix starts the payload of a wake-up, followed by the instant the
// task becomes claimable, in milliseconds (wakeUpsSchema); before it, a
// wake-up's payload was empty.
const duePrefix = "due:"

var dialect = driver.Dialect{
	Name: "postgresql",
	Migrations: []string{
		secretsSchema,
		subscriptionsSchema,
		deliveryLogSchema,
		clientStateSchema,
		outboxSchema,
		tasksSchema,
		transcriptsSchema,
		broadcastsSchema,
		tokenProofsSchema,
		devicesSchema,
		instancesSchema,
		outboxBurstSchema,
		quietHoursSchema,
		idempotencySchema,
		interruptsSchema,
		llmCredentialsSchema,
		languageSchema,
		broadcastRateSchema,
		cloudDataSchema,
		pendingTasksSchema,
		leaseSchema,
		messageEventsSchema,
		webhooksSchema,
		claimHOTSchema,
		outboxBytewiseSchema,
		timeRangesSchema,
		receiptOnceSchema,
		interruptResumedSchema,
		attemptsUnindexedSchema,
		wakeUpsSchema,
		appendOrderedSchema,
		tasksByUserSchema,
		eventRowsSchema,
		claimInPlaceSchema,
		outboxBytesSchema,
		eventsByOutboxSchema,
	},

	ClaimableAt: `claimable_at`,
	// A lease is not in claimable_at (claimHOTSchema): see
	// amsg_next_claimable there.
	NextClaimable: `SELECT amsg_next_claimable()`,
	// River's claim: lock the earliest due rows, skipping those another
	// instance has locked for its own claim, then lease them, in one
	// statement at READ COMMITTED. $n keeps the arguments in SQLite's order.
	// The lease changes no indexed column (not even updated_at, which
	// tasks_finished indexes: $2 is only typed), so the update is HOT: no
	// index entry per leased row (claimHOTSchema). The leased rows are
	// found by their ids through the primary key, a plan that needs no
	// statistics (see ClaimPlan). The walk starts after the key $7, $8
	// (store/claimbound.go), which the index's range serves.
	ClaimDueTasks: `WITH due (due_id) AS (
			SELECT id FROM tasks WHERE status = 'pending' AND claimable_at <= $3
				AND (lease_until IS NULL OR lease_until <= $6)
				AND user_id NOT IN (SELECT value FROM json_array_elements_text($4::json))
				AND (claimable_at, id) > ($7, $8)
			ORDER BY claimable_at, id LIMIT $5 FOR UPDATE SKIP LOCKED)
		UPDATE tasks SET lease_until = $1 WHERE id = ANY (ARRAY(SELECT due_id FROM due)) AND $2::bigint IS NOT NULL
		RETURNING `,
	ClaimAfter: true,
	// The claim is planned once a session (a generic plan) where PostgreSQL
	// planned it afresh on every call, as its estimated cost with unknown
	// parameters was above a custom plan's: 0.45 ms of planning for 1.4 ms of
	// execution (issue 24). A generic plan is made with the statistics of
	// the moment and kept, so it must not depend on them: with sequential
	// scans, sorts and bitmap scans off the only plan left walks tasks_due in
	// order and stops at the limit, also when the statistics say the table
	// is empty. The settings hold for the rest of the claim's transaction,
	// whose other writes (store/batches.go, the outbox, leases) are keyed
	// lookups and inserts. One round trip: without arguments pgx sends it
	// as one simple query, and a SET is not planned.
	ClaimPlan: `SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL enable_seqscan = off;
		SET LOCAL enable_sort = off; SET LOCAL enable_bitmapscan = off`,
	NotifyCancel: `SELECT pg_notify(current_schema() || '.` + tasksChannel + `', '` + cancelPrefix + `' || ?::text)`,
	Greatest:     `GREATEST`,
	InJSONArray:  `SELECT value FROM json_array_elements_text(?::json)`,
	ByteOrder:    ` COLLATE "C"`,
	ArrayParams:  true,

	BatchStatements: true,

	AfterCopy: []string{
		resetIdentity("subscriptions"), resetIdentity("delivery_log"), resetIdentity("message_outbox"),
		resetIdentity("tasks"), resetIdentity("transcript_sessions"), eventsIdentityPastSeqs,
		resetIdentity("webhook_deliveries"),
	},

	Tables: `SELECT table_name::text FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`,
	Columns: `SELECT column_name::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position`,
	Indexes: `SELECT i.relname::text, x.indisunique,
			CASE WHEN x.indisprimary THEN 'pk' WHEN c.oid IS NOT NULL THEN 'u' ELSE 'c' END,
			x.indpred IS NOT NULL
		FROM pg_index x
		JOIN pg_class i ON i.oid = x.indexrelid
		JOIN pg_class t ON t.oid = x.indrelid
		LEFT JOIN pg_constraint c ON c.conindid = x.indexrelid AND c.contype IN ('u', 'p')
		WHERE t.relnamespace = current_schema()::regnamespace AND t.relname = ?
		ORDER BY i.relname`,
	IndexColumns: `SELECT coalesce(a.attname::text, '<expression>')
		FROM pg_index x
		JOIN pg_class i ON i.oid = x.indexrelid
		CROSS JOIN LATERAL unnest(x.indkey::int2[]) WITH ORDINALITY AS k (attnum, ord)
		LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum AND k.attnum > 0
		WHERE i.relnamespace = current_schema()::regnamespace AND i.relname = ?
		ORDER BY k.ord`,
}

// resetIdentity moves the identity of table's id past the ids it holds.
func resetIdentity(table string) string {
	return `SELECT setval(pg_get_serial_sequence('` + table + `', 'id'), coalesce(max(id), 0) + 1, false) FROM ` + table
}
