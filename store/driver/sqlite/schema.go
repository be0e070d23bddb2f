package sqlite

// The schema's steps, one per feature, in the order of dialect.Migrations.
// The store's feature files say what the tables hold.
const (
	secretsSchema = `
CREATE TABLE secrets (
	name       TEXT PRIMARY KEY,
	value      TEXT NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;
`
	subscriptionsSchema = `
CREATE TABLE subscriptions (
	id              INTEGER PRIMARY KEY,
	user_id         TEXT NOT NULL,
	endpoint_sha256 BLOB NOT NULL UNIQUE,
	subscription    TEXT NOT NULL, -- sealed PushSubscription JSON, as sent
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX subscriptions_user ON subscriptions (user_id, updated_at);
`
	deliveryLogSchema = `
CREATE TABLE delivery_log (
	id         INTEGER PRIMARY KEY,
	at         INTEGER NOT NULL,
	message_id TEXT NOT NULL,
	user_id    TEXT NOT NULL,
	device_id  INTEGER NOT NULL,
	push_host  TEXT NOT NULL,
	try        INTEGER NOT NULL,
	status     INTEGER NOT NULL,
	outcome    TEXT NOT NULL,
	latency_ms INTEGER NOT NULL,
	error      TEXT NOT NULL
) STRICT;
CREATE INDEX delivery_log_message ON delivery_log (message_id);
CREATE INDEX delivery_log_at ON delivery_log (at);
`
	clientStateSchema = `
CREATE TABLE client_state (
	user_id    TEXT NOT NULL,
	namespace  TEXT NOT NULL,
	key        TEXT NOT NULL,
	value      TEXT NOT NULL,    -- sealed value, or a chunk root's plaintext marker
	updated_at INTEGER NOT NULL, -- the last-write-wins guard: version, else the client's epoch ms
	PRIMARY KEY (user_id, namespace, key)
) STRICT;
`
	outboxSchema = `
CREATE TABLE message_outbox (
	id             INTEGER PRIMARY KEY AUTOINCREMENT,
	user_id        TEXT NOT NULL,
	message_id     TEXT NOT NULL,
	task_uuid      TEXT,
	session_id     TEXT,
	message_index  INTEGER,
	total_messages INTEGER,
	payload        TEXT NOT NULL, -- sealed push JSON, as sent
	created_at     INTEGER NOT NULL,
	delivered_at   INTEGER,
	acked_at       INTEGER,
	UNIQUE (user_id, message_id)
) STRICT;
CREATE INDEX message_outbox_unacked ON message_outbox (user_id, id) WHERE acked_at IS NULL;
CREATE INDEX message_outbox_created ON message_outbox (created_at);
CREATE INDEX message_outbox_acked ON message_outbox (acked_at) WHERE acked_at IS NOT NULL;
CREATE INDEX message_outbox_session ON message_outbox (user_id, session_id) WHERE session_id IS NOT NULL;
`
	tasksSchema = `
CREATE TABLE tasks (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	user_id      TEXT NOT NULL,
	uuid         TEXT NOT NULL UNIQUE,
	payload      TEXT NOT NULL,
	message_type TEXT NOT NULL CHECK (message_type IN ('fixed', 'prompted', 'auto', 'instant')),
	next_send_at INTEGER NOT NULL,
	lease_until  INTEGER,
	retry_after  INTEGER,
	status       TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
	retry_count  INTEGER NOT NULL DEFAULT 0,
	last_error   TEXT,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX tasks_due ON tasks (max(next_send_at, coalesce(lease_until, 0), coalesce(retry_after, 0)), id)
	WHERE status = 'pending';
CREATE INDEX tasks_user ON tasks (user_id, next_send_at);
CREATE INDEX tasks_finished ON tasks (updated_at) WHERE status IN ('sent', 'failed');
`
	transcriptsSchema = `
CREATE TABLE transcript_sessions (
	id               INTEGER PRIMARY KEY,
	owner            TEXT NOT NULL,
	session_id       TEXT NOT NULL,
	settings         TEXT NOT NULL, -- sealed JSON the loop keeps with the session
	last_seq         INTEGER NOT NULL,
	input_tokens     INTEGER NOT NULL,
	cached_tokens    INTEGER NOT NULL,
	output_tokens    INTEGER NOT NULL,
	reasoning_tokens INTEGER NOT NULL,
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL,
	UNIQUE (owner, session_id)
) STRICT;
CREATE INDEX transcript_sessions_updated ON transcript_sessions (updated_at);
CREATE TABLE transcript_entries (
	session          INTEGER NOT NULL REFERENCES transcript_sessions (id) ON DELETE CASCADE,
	seq              INTEGER NOT NULL,
	id               TEXT NOT NULL, -- ULID
	at               INTEGER NOT NULL,
	type             TEXT NOT NULL,
	iteration        INTEGER NOT NULL,
	input_tokens     INTEGER NOT NULL,
	cached_tokens    INTEGER NOT NULL,
	output_tokens    INTEGER NOT NULL,
	reasoning_tokens INTEGER NOT NULL,
	pushes           TEXT NOT NULL, -- JSON array of messageIds
	body             TEXT NOT NULL, -- sealed JSON
	PRIMARY KEY (session, seq)
) STRICT, WITHOUT ROWID;
CREATE INDEX transcript_entries_at ON transcript_entries (at);
`
)

// broadcastsSchema: one row per operator broadcast.
const broadcastsSchema = `
CREATE TABLE broadcasts (
	id          TEXT PRIMARY KEY,
	message     TEXT NOT NULL, -- JSON: the send request minus the user id
	user_ids    TEXT,          -- JSON array of user ids; NULL means every user
	cursor      TEXT NOT NULL,
	sent        INTEGER NOT NULL,
	failed      INTEGER NOT NULL,
	status      TEXT NOT NULL CHECK (status IN ('running', 'done', 'stopped')),
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
) STRICT;
`

// tokenProofsSchema: one row per user, its last proof of the client token.
const tokenProofsSchema = `
CREATE TABLE client_token_proofs (
	user_id   TEXT PRIMARY KEY,
	token_mac TEXT NOT NULL,
	seen_at   INTEGER NOT NULL
) STRICT;
`

// devicesSchema: a device's last report of life.
const devicesSchema = `
ALTER TABLE subscriptions ADD COLUMN last_seen_at INTEGER;
`

// outboxBurstSchema: a scheduled occurrence's pushes are found by the
// prefix of their message ids on the (user_id, message_id) index, so the
// session index is one index less to write per push.
const outboxBurstSchema = `
DROP INDEX message_outbox_session;
`

// instancesSchema: one row per running amsg, heartbeated.
const instancesSchema = `
CREATE TABLE instances (
	id           TEXT PRIMARY KEY,
	started_at   INTEGER NOT NULL,
	heartbeat_at INTEGER NOT NULL
) STRICT;
`

// quietHoursSchema: a user's preferences (quiet hours, daily limit), the
// time a task waits for the end of quiet hours, and the proactive pushes
// that took a slot of a user's local day.
const quietHoursSchema = `
CREATE TABLE user_preferences (
	user_id     TEXT PRIMARY KEY,
	time_zone   TEXT,
	quiet_start INTEGER, -- minutes after local midnight
	quiet_end   INTEGER,
	daily_limit INTEGER,
	updated_at  INTEGER NOT NULL
) STRICT;
ALTER TABLE tasks ADD COLUMN deferred_until INTEGER;
CREATE TABLE proactive_pushes (
	user_id    TEXT NOT NULL,
	day        TEXT NOT NULL, -- the user's local date, YYYY-MM-DD
	push_key   TEXT NOT NULL, -- the occurrence or send that took the slot
	created_at INTEGER NOT NULL,
	PRIMARY KEY (user_id, day, push_key)
) STRICT;
CREATE INDEX proactive_pushes_created ON proactive_pushes (created_at);
`

// idempotencySchema: the first answer of each request sent with an
// Idempotency-Key, per scope (a user, or the operator) and key.
const idempotencySchema = `
CREATE TABLE idempotency_keys (
	scope        TEXT NOT NULL,
	key          TEXT NOT NULL,
	request_hash TEXT NOT NULL, -- SHA-256 of the route and the request's plaintext, hex
	status       INTEGER,       -- NULL while the first request runs
	body         TEXT,
	created_at   INTEGER NOT NULL,
	PRIMARY KEY (scope, key)
) STRICT;
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
`

// interruptsSchema: one row per approval an agent loop waits for (issue
// 21). body (the tool call and what resuming needs, the LLM credentials
// among it) and reason are sealed with the user's key; state moves once,
// from pending, in a fenced UPDATE.
const interruptsSchema = `
CREATE TABLE interrupts (
	id           TEXT PRIMARY KEY,
	user_id      TEXT NOT NULL,
	session_id   TEXT NOT NULL,
	iteration    INTEGER NOT NULL,
	tool_call_id TEXT NOT NULL,
	body         TEXT NOT NULL,
	state        TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'expired')),
	reason       TEXT,
	decided_by   INTEGER,
	created_at   INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL,
	decided_at   INTEGER
) STRICT;
CREATE INDEX interrupts_due ON interrupts (expires_at) WHERE state = 'pending';
CREATE INDEX interrupts_user ON interrupts (user_id, session_id, iteration);
CREATE INDEX interrupts_decided ON interrupts (decided_at) WHERE state <> 'pending';
`

// llmCredentialsSchema: a user's LLM credentials, which tasks name by
// cred_id (credRefs) instead of carrying them; the value is the sealed JSON
// {apiUrl, apiKey, primaryModel}.
const llmCredentialsSchema = `
CREATE TABLE llm_credentials (
	user_id    TEXT NOT NULL,
	cred_id    TEXT NOT NULL,
	value      TEXT NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (user_id, cred_id)
) STRICT;
`

// languageSchema: the language a device reported (BCP 47, "" for none),
// which the notification texts amsg writes follow.
const languageSchema = `
ALTER TABLE subscriptions ADD COLUMN language TEXT NOT NULL DEFAULT '';
`

// broadcastRateSchema: a broadcast's pace, so a resumed one keeps it.
const broadcastRateSchema = `
ALTER TABLE broadcasts ADD COLUMN rate_per_second INTEGER NOT NULL DEFAULT 10;
`

// cloudDataSchema: the user's data inventory and cleanup (store/clouddata.go).
// cloud_owners is one row per owner the user retired or restored;
// cloud_owned one row per owned resource (its owner and kind, sealed);
// cloud_records the inventory snapshots, cleanup plans and operations,
// sealed. Owner keys are keyed hashes: no owner id is stored in clear.
const cloudDataSchema = `
CREATE TABLE cloud_owners (
	user_id    TEXT NOT NULL,
	owner_key  TEXT NOT NULL,
	owner      TEXT NOT NULL, -- sealed {type, id, label}
	active     INTEGER NOT NULL,
	generation INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (user_id, owner_key)
) STRICT;
CREATE TABLE cloud_owned (
	user_id    TEXT NOT NULL,
	type       TEXT NOT NULL, -- the resource type: task, state, credential, preference
	ref        TEXT NOT NULL, -- the resource's identity within its type
	owner_key  TEXT NOT NULL, -- '' for a resource with a kind and no owner
	meta       TEXT NOT NULL, -- sealed {owner, kind, generation}
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (user_id, type, ref)
) STRICT;
CREATE TABLE cloud_records (
	user_id         TEXT NOT NULL,
	kind            TEXT NOT NULL CHECK (kind IN ('inventory', 'plan', 'operation')),
	id              TEXT NOT NULL,
	idempotency_key TEXT,
	data            TEXT NOT NULL, -- sealed JSON
	next_run_at     INTEGER,       -- an unfinished operation's next attempt
	expires_at      INTEGER,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	PRIMARY KEY (user_id, kind, id)
) STRICT;
CREATE UNIQUE INDEX cloud_records_idempotency ON cloud_records (user_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX cloud_records_due ON cloud_records (next_run_at) WHERE next_run_at IS NOT NULL;
CREATE INDEX cloud_records_expiry ON cloud_records (expires_at) WHERE expires_at IS NOT NULL;
`

// pendingTasksSchema: the per-user task quota counts a user's pending tasks
// (store.PendingTasks) on an index of their own, without reading the
// user's other tasks (issue 24: the check cost 200 µs).
const pendingTasksSchema = `
CREATE INDEX tasks_pending_user ON tasks (user_id) WHERE status = 'pending';
`

// messageEventsSchema: the story of each message (store/events.go), one row
// per event; message_events_message serves a message's timeline, the
// primary key the readers that follow every event, message_events_at the
// pruning.
const messageEventsSchema = `
CREATE TABLE message_events (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	at         INTEGER NOT NULL,
	user_id    TEXT NOT NULL,
	message_id TEXT NOT NULL, -- '' for an event about no one message
	device_id  TEXT NOT NULL, -- '' for an event about no one device
	type       TEXT NOT NULL,
	detail     TEXT NOT NULL  -- JSON object
) STRICT;
CREATE INDEX message_events_message ON message_events (user_id, message_id, id);
CREATE INDEX message_events_at ON message_events (at);
`

// receiptOnceSchema: a device's report of a message (shown, clicked,
// dismissed) is one row, however many times and through however many
// instances it arrives: store.RecordReceipts inserts it ON CONFLICT DO
// NOTHING on this index. Rows an older version recorded twice keep their
// first.
const receiptOnceSchema = `
DELETE FROM message_events WHERE type IN ('shown', 'clicked', 'dismissed') AND id NOT IN (
	SELECT min(id) FROM message_events WHERE type IN ('shown', 'clicked', 'dismissed')
	GROUP BY user_id, message_id, device_id, type);
CREATE UNIQUE INDEX message_events_receipt ON message_events (user_id, message_id, device_id, type)
	WHERE type IN ('shown', 'clicked', 'dismissed');
`

// webhooksSchema: signed webhooks (store/webhooks.go). webhook_endpoints are
// the operator's receivers, their secret sealed at rest; webhook_cursor is
// how far the fan-out has read message_events; webhook_deliveries one row
// per event and endpoint, written before the first try, unique per event so
// a re-read adds nothing, webhook_deliveries_message serving the per-message
// order and webhook_deliveries_due the sender's read.
const webhooksSchema = `
CREATE TABLE webhook_endpoints (
	id         TEXT PRIMARY KEY,
	url        TEXT NOT NULL,
	events     TEXT NOT NULL,    -- space-separated webhook event types
	secret     TEXT NOT NULL,    -- sealed at rest
	batch      INTEGER NOT NULL, -- 1: several events in one request, as a JSON array
	start_seq  INTEGER NOT NULL, -- events at or below it happened before the endpoint
	created_at INTEGER NOT NULL
) STRICT;
CREATE TABLE webhook_cursor (
	name TEXT PRIMARY KEY,
	seq  INTEGER NOT NULL
) STRICT;
CREATE TABLE webhook_deliveries (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	endpoint_id TEXT NOT NULL,
	event_seq   INTEGER NOT NULL,
	message_key TEXT NOT NULL,    -- deliveries with the same key go in order; '' none
	payload     TEXT NOT NULL,    -- the JSON object sent
	state       TEXT NOT NULL CHECK (state IN ('pending', 'done', 'failed')),
	attempts    INTEGER NOT NULL,
	next_at     INTEGER NOT NULL,
	created_at  INTEGER NOT NULL,
	finished_at INTEGER,
	last_status INTEGER NOT NULL, -- the receiver's last HTTP status, 0 for none
	last_error  TEXT NOT NULL
) STRICT;
CREATE UNIQUE INDEX webhook_deliveries_event ON webhook_deliveries (endpoint_id, event_seq);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_message ON webhook_deliveries (endpoint_id, message_key, id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE finished_at IS NOT NULL;
`

// interruptResumedSchema: resumed_at is set once the loop an interrupt's
// round paused has been resumed (or found nothing to resume), so the
// interrupts settled but never followed, because their instance stopped or
// died between the decision and the resumed round, can be found and resumed
// by any instance (store.UnresumedInterrupts). Interrupts settled before
// this migration count as resumed.
const interruptResumedSchema = `
ALTER TABLE interrupts ADD COLUMN resumed_at INTEGER;
UPDATE interrupts SET resumed_at = decided_at WHERE state <> 'pending';
CREATE INDEX interrupts_unresumed ON interrupts (decided_at) WHERE state <> 'pending' AND resumed_at IS NULL;
`

// attemptsUnindexedSchema: no read looks the delivery log up by message
// (the timeline tells a message's attempts from its events, the operator's
// chart and the prune read by time, a user's cleanup by user), so the index
// of message ids goes: one B-tree entry less a push, on a leaf per message
// rather than the last one (issue 24).
const attemptsUnindexedSchema = `
DROP INDEX delivery_log_message;
`

// appendOrderedSchema: the B-trees by time of three append-only tables go
// (issue 24): message_events_at (three entries a push), delivery_log_at and
// message_outbox_created (one each), about a tenth of the pages a push
// writes. Rows are appended in nearly the order of those times, so the
// store reads them by rowid range instead, found by a binary search over the
// rowid (store/timeorder.go); PostgreSQL reads block-range indexes
// (its timeRangesSchema).
const appendOrderedSchema = `
DROP INDEX message_events_at;
DROP INDEX delivery_log_at;
DROP INDEX message_outbox_created;
`

// tasksByUserSchema: one index of a user's tasks, by status then time,
// where there were two (tasks_user by time, tasks_pending_user for the
// quota): a task scheduled and delivered writes and removes one entry
// fewer (issue 24: the two were a fifth of a delivered push's pages with
// 20 000 tasks due later). The quota counts the (user, 'pending') prefix;
// a listing of one status reads its range in time order, a listing of
// every status merges the statuses' ranges (store.Tasks).
const tasksByUserSchema = `
DROP INDEX tasks_pending_user;
DROP INDEX tasks_user;
CREATE INDEX tasks_user ON tasks (user_id, status, next_send_at);
`

// eventRowsSchema: a delivery's queued, sent and accepted events share one
// row of message_events (store/events_rows.go: one entry in the table and
// in message_events_message where there were three, issue 24). queued_at
// is the queued event's time in such a row, NULL in every other; the row's
// id is its last event's Seq, the Seqs before it reserved: the store gives
// such a row its id from the AUTOINCREMENT counter.
const eventRowsSchema = `
ALTER TABLE message_events ADD COLUMN queued_at INTEGER;
`

// outboxBytesSchema: the outbox's sealed payload is stored as bytes,
// iv||tag||ciphertext, where it was the standard's hex(iv):hex(tag):hex(ct)
// text (issue 24): half the bytes a push writes there, and no hex to build.
// A STRICT column cannot change its type, so the table is built again with
// its ids and its AUTOINCREMENT high-water mark (clients page /messages by
// id), and its indexes as they are now. A row that is not that hex becomes
// an empty value, which does not open, as it did not before: reads skip it.
const outboxBytesSchema = `
CREATE TABLE message_outbox_bytes (
	id             INTEGER PRIMARY KEY AUTOINCREMENT,
	user_id        TEXT NOT NULL,
	message_id     TEXT NOT NULL,
	task_uuid      TEXT,
	session_id     TEXT,
	message_index  INTEGER,
	total_messages INTEGER,
	payload        BLOB NOT NULL, -- sealed push JSON, iv||tag||ciphertext
	created_at     INTEGER NOT NULL,
	delivered_at   INTEGER,
	acked_at       INTEGER,
	UNIQUE (user_id, message_id)
) STRICT;
INSERT INTO message_outbox_bytes
	SELECT id, user_id, message_id, task_uuid, session_id, message_index, total_messages,
		coalesce(unhex(replace(payload, ':', '')), x''), created_at, delivered_at, acked_at
	FROM message_outbox ORDER BY id;
DELETE FROM sqlite_sequence WHERE name = 'message_outbox_bytes';
INSERT INTO sqlite_sequence (name, seq)
	SELECT 'message_outbox_bytes', seq FROM sqlite_sequence WHERE name = 'message_outbox';
DROP TABLE message_outbox;
ALTER TABLE message_outbox_bytes RENAME TO message_outbox;
CREATE INDEX message_outbox_unacked ON message_outbox (user_id, id) WHERE acked_at IS NULL;
CREATE INDEX message_outbox_acked ON message_outbox (acked_at) WHERE acked_at IS NOT NULL;
`

// eventsByOutboxSchema: an event of a message that has an outbox row
// carries that row's id (outbox_id, looked up when the event is inserted),
// and message_events_outbox finds it; message_events_message keeps only the
// events without one (issue 24). A delivered push's event row thus adds an
// entry to an index keyed by outbox ids, which grow with time (appended at
// the tree's end, a commit's pushes sharing its last leaf), where it added
// one keyed by (user, random message id): about a WAL frame a push. The
// foreign key sets an outbox row's events' outbox_id to NULL when the row
// goes (DeleteOutbox, retention, a user's deletion), so they stay on
// message_events_message: a timeline reads its outbox row's events and
// the message's events without a row (store.MessageTimeline), a user's
// events are those of its outbox rows and its events without one.
// Existing rows keep NULL. A later migration that builds message_outbox
// again (as outboxBytesSchema did) must keep its ids and run with foreign
// keys off: dropping the old table would set every outbox_id to NULL,
// which loses no event but brings back their entries in
// message_events_message.
const eventsByOutboxSchema = `
ALTER TABLE message_events ADD COLUMN outbox_id INTEGER REFERENCES message_outbox (id) ON DELETE SET NULL;
CREATE INDEX message_events_outbox ON message_events (outbox_id) WHERE outbox_id IS NOT NULL;
DROP INDEX message_events_message;
CREATE INDEX message_events_message ON message_events (user_id, message_id, id) WHERE outbox_id IS NULL;
`
