package sqlite

import "amsg/store/driver"

// claimableAt is the indexed expression of tasks_due, a task's own time
// without its lease (claimInPlaceSchema); queries must spell it exactly so
// for SQLite to use the index.
const claimableAt = `max(next_send_at, coalesce(retry_after, 0))`

var dialect = driver.Dialect{
	Name: "sqlite",
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

	ClaimableAt:   claimableAt,
	NextClaimable: nextClaimableSQL,
	// One statement in a write on the one writer connection: two claimers
	// never get the same task. ?6 (now) keeps a claim that looks ahead off
	// a lease that has not ended yet. The unary plus on the times and on
	// the limit keeps the prepared claim from being compiled again on nearly
	// every run: SQLite plans with a bare parameter's bound value where it
	// can (a LIMIT since 3.54; a range on an index with sqlite_stat4
	// samples, which the PRAGMA optimize of Close leaves), and then expires
	// the statement whenever that value changes, as the times and the limit
	// do from one claim to the next.
	ClaimDueTasks: `UPDATE tasks SET lease_until = ?1, updated_at = ?2
		WHERE id IN (SELECT id FROM tasks WHERE status = 'pending' AND ` + claimableAt + ` <= +?3
				AND coalesce(lease_until, 0) <= +?6 AND user_id NOT IN (SELECT value FROM json_each(?4))
			ORDER BY ` + claimableAt + `, id LIMIT +?5)
		RETURNING `,
	Greatest:    `max`,
	InJSONArray: `SELECT value FROM json_each(?)`,

	Tables: `SELECT name FROM sqlite_schema
		WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`,
	Columns:      `SELECT name FROM pragma_table_info(?) ORDER BY cid`,
	Indexes:      `SELECT name, "unique", origin, partial FROM pragma_index_list(?) ORDER BY name`,
	IndexColumns: `SELECT coalesce(name, '<expression>') FROM pragma_index_info(?) ORDER BY seqno`,
}
