// Package driver is the seam between the store's domain logic and a SQL
// dialect. The store writes each statement once, with ? placeholders, where
// SQLite and PostgreSQL agree (most of them: INSERT … ON CONFLICT, RETURNING,
// LIMIT … OFFSET); a Driver opens the database, runs transactions with the
// guarantees the store relies on, and holds, in its Dialect, the SQL the two
// disagree on: the schema, the claim, the catalogue queries. The store picks
// the driver from its configuration; nothing outside store imports this.
package driver

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// ErrClosed is a write to a driver that was closed.
var ErrClosed = errors.New("the database is closed")

// Driver is one open database.
type Driver interface {
	// Writer runs statements that change rows; Reader those that only read.
	// They may be the same pool.
	Writer() *sql.DB
	Reader() *sql.DB
	// Dialect is the SQL this database speaks where the dialects differ.
	Dialect() *Dialect
	// Write runs fn in a transaction that behaves as if it were the only
	// writer: SQLite's IMMEDIATE transaction on its one connection (group
	// committed with the writes waiting beside it, each in a savepoint),
	// PostgreSQL's SERIALIZABLE one, retried from the start while it loses a
	// serialization conflict. So fn may run more than once and must not keep
	// state across runs. After Close it returns ErrClosed.
	Write(ctx context.Context, fn func(*sql.Tx) error) error
	// WriteLocked is Write for fn whose statements lock the rows they
	// depend on themselves (an UPDATE or DELETE fenced by its WHERE, an
	// INSERT … ON CONFLICT, SELECT … FOR UPDATE SKIP LOCKED), so READ
	// COMMITTED keeps them correct: PostgreSQL runs them at that level,
	// where SKIP LOCKED keeps claimers apart and no serialization conflict
	// makes them run again; SQLite as any write.
	WriteLocked(ctx context.Context, fn func(*sql.Tx) error) error
	// WriteCombined is WriteLocked for item, a write of kind: a driver
	// whose writer commits many writes together (SQLite's group commit)
	// runs those of one kind in a group in one call of kind.Combine, so
	// their rows go in multi-row statements; another runs each alone. It
	// returns the error of the call that ran item alone, or the commit's.
	WriteCombined(ctx context.Context, kind *WriteKind, item any) error
	// Exclusive runs fn while no other process that calls Exclusive with the
	// same name on this database runs it (an advisory lock on PostgreSQL;
	// SQLite's callers are kept apart by the data-directory lock and its one
	// writer).
	Exclusive(ctx context.Context, name string, fn func() error) error
	// Probe runs fn in a write transaction on a fresh connection, opened
	// the way Open opened the database, so a health check notices what the
	// pooled connections would not (SQLite: a file deleted or replaced under
	// them).
	Probe(ctx context.Context, fn func(*sql.Tx) error) error
	// Leader is a campaign for the leadership called name among the
	// processes on this database. A leader that stops checking loses it
	// within ttl where leadership is a lease (PostgreSQL behind a
	// transaction pooler alone), at once where it is a session lock.
	Leader(name string, ttl time.Duration) Leader
	// ListenTasks calls wake whenever another process may have made a task
	// claimable within horizon from now (a task due later is found by the
	// scheduler's own timer, which never waits longer than horizon), and
	// cancelled with a task's id when another process
	// deleted a task whose occurrence was being delivered (NotifyCancel),
	// until ctx ends (nil) or its connection fails. Wake-ups are a hint
	// that saves waiting for a timer, never the only way a task is found; a
	// missed cancel is noticed by the lease heartbeat. SQLite's one process
	// wakes and cancels itself, so its ListenTasks only waits for ctx.
	ListenTasks(ctx context.Context, horizon time.Duration, wake func(), cancelled func(taskID int64)) error
	// Commits is how many write transactions the driver has committed
	// (a group of writes counts once): the benchmarks divide it by the
	// pushes to tell how well writes are grouped.
	Commits() uint64
	// Close stops the writes, runs what the database wants run last (SQLite,
	// after writes of its own: PRAGMA optimize, a TRUNCATE checkpoint) and
	// releases the database.
	Close() error
	// Backup writes a consistent copy of the database into dest, an empty
	// file the caller created, while other processes keep reading and
	// writing (SQLite: VACUUM INTO). A database copied by its own tools
	// (PostgreSQL: pg_dump) returns an error that names them.
	Backup(ctx context.Context, dest string) error
	// CheckIntegrity reads the database for damage, as a restore wants of a
	// file before it replaces the database (SQLite: PRAGMA quick_check).
	// PostgreSQL checks pages as it reads them and adds nothing.
	CheckIntegrity(ctx context.Context) error
	// PollOnly reports that the database is reached through a transaction
	// pooler alone (PostgreSQL without a direct URL): leadership is a lease,
	// and ListenTasks hears nothing, so other processes' new tasks are
	// found by the scheduler's tick.
	PollOnly() bool
	// StatementContext is the context a write's statements run with, given
	// the caller's. SQLite's runs them without its cancellation (see there);
	// PostgreSQL's keeps it.
	StatementContext(ctx context.Context) context.Context
}

// Leader elects one process among those on a database.
type Leader interface {
	// Check reports whether this process leads now, taking the leadership
	// when nobody holds it. A leader that died (its connection gone) frees
	// it for the next Check of another process.
	Check(ctx context.Context) (bool, error)
	// Release gives the leadership up.
	Release() error
}

// Dialect is the SQL a driver speaks where SQLite and PostgreSQL disagree,
// one field per statement or fragment, as ntfy keeps a table of queries per
// dialect. Placeholders are ?; PostgreSQL's driver rewrites them.
type Dialect struct {
	// Name is the database's name as OpenTelemetry's db.system.name
	// spells it: "sqlite" or "postgresql".
	Name string
	// Migrations are the schema's history, oldest first: step i brings the
	// schema to version i+1. Both dialects have the same steps in the same
	// order, so a version means the same tables in either.
	Migrations []string

	// ClaimableAt is the instant a pending task becomes claimable, spelled
	// as the tasks_due index spells it: the latest of next_send_at and
	// retry_after, a lease being checked apart (see NextClaimable).
	ClaimableAt string
	// NextClaimable is the earliest instant a pending task becomes
	// claimable, leases included, as one value (NULL when none is pending).
	NextClaimable string
	// ClaimDueTasks leases due tasks. Arguments: lease_until, updated_at,
	// the time the tasks are due by, the users to pass over as a JSON
	// array, limit, now (a lease ending after it holds). It ends in
	// RETURNING, to which the store appends its task columns. PostgreSQL
	// skips rows another instance is claiming at the same moment instead of
	// waiting for them.
	ClaimDueTasks string
	// ClaimAfter says ClaimDueTasks takes two more arguments, a key of
	// tasks_due (claimable_at, id) its walk starts after (store/claimbound.go).
	ClaimAfter bool
	// ClaimPlan, when not "", runs in the claim's transaction before
	// ClaimDueTasks: PostgreSQL turns bitmap scans off there, since with
	// statistics older than a burst of inserts the planner reads and sorts
	// every due task on each claim instead of walking tasks_due in order
	// and stopping at the limit.
	ClaimPlan string
	// BatchStatements says the store batches the delivery path's writes
	// into multi-row statements (store/batches.go). It pays where every
	// statement costs a round trip and the executor's start (PostgreSQL);
	// in process (SQLite) a batcher of the store's starves the writer's
	// group commit: each write goes to the driver's writer
	// (WriteCombined), which runs those of a kind it commits together in
	// one call.
	BatchStatements bool
	// NotifyCancel, run in the transaction that deletes a task being
	// delivered with the task's id as its argument, tells the other
	// processes' ListenTasks to stop the delivery; "" where there are none.
	NotifyCancel string
	// Greatest names the function of the largest of its arguments.
	Greatest string
	// InJSONArray is a subquery of the text values of the JSON array given
	// as its one argument: x IN (InJSONArray).
	InJSONArray string
	// ByteOrder follows a text column to compare it byte by byte, as the
	// outbox's (user_id, message_id) index orders it, so a range of
	// message ids is exactly the ids with a prefix.
	ByteOrder string
	// ArrayParams: the driver binds a Go slice as an array, so the store
	// writes a batch of rows as one array per column (store/arrays.go).
	ArrayParams bool

	// Catalogue queries of POST /init-tenant's schema report. Tables lists
	// the application's tables; Columns (table) a table's columns in order;
	// Indexes (table) name, unique, origin (c, u or pk) and partial of each
	// index; IndexColumns (index) its columns in order, '<expression>' for
	// an expression.
	Tables       string
	Columns      string
	Indexes      string
	IndexColumns string

	// AfterCopy runs after rows were copied in with their ids, so that new
	// rows get ids after theirs.
	AfterCopy []string
}

// unhurriedKey marks a context of Unhurried.
type unhurriedKey struct{}

// Unhurried marks the writes made with ctx as records nobody waits on to
// go on (a delivered occurrence's completion): a driver may hold such a
// write back a moment to commit it with others (SQLite's writer does while
// writes come one by one; on PostgreSQL the store's own batches do).
func Unhurried(ctx context.Context) context.Context {
	return context.WithValue(ctx, unhurriedKey{}, true)
}

// IsUnhurried reports whether ctx was marked by Unhurried.
func IsUnhurried(ctx context.Context) bool {
	v, _ := ctx.Value(unhurriedKey{}).(bool)
	return v
}

// WriteKind is a kind of write of which a driver runs the ones it commits
// together in one call (Driver.WriteCombined).
type WriteKind struct {
	// Combine runs items, writes of this kind in the order they came, in
	// tx. It answers each item itself (an item carries its outcome); an
	// error fails the call: the driver undoes what it wrote and runs each
	// item again in a call of its own, so that an item's failure is its
	// own. So Combine may run an item more than once and must not keep
	// state across calls.
	Combine func(ctx context.Context, tx *sql.Tx, items []any) error
}
