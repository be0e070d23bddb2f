package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"amsg/push"
)

// Scheduled tasks, one row per task. next_send_at is the nominal time of the
// next occurrence and is never moved by leases or backoff: lease_until says
// someone is delivering the row, retry_after that a failed attempt waits.
// The payload is the task's JSON, sealed with the user key. last_error is
// plaintext, already sanitized by the scheduler.
//
// AUTOINCREMENT keeps ids from being reused: push ids embed the task id
// (msg_task_<id>@<occurrenceMs>_<i>) and the service worker drops a push
// whose id it has seen.
//
// tasks_due indexes a pending row by its own time, the latest of
// next_send_at and retry_after, so the claim query is one range scan
// however many due rows back off. It leaves the lease out, so that a lease
// writes no index entry: the claim skips the few rows in delivery instead,
// and a task whose lease ran out (its claimer died) keeps its place by its
// own time, ahead of the tasks due after it (the dialects' claimHOTSchema,
// claimInPlaceSchema).

// TaskStatus is a task's status.
type TaskStatus string

// Task statuses. Every live task is pending, also while it is being
// delivered or waits to retry.
const (
	TaskPending TaskStatus = "pending"
	TaskSent    TaskStatus = "sent"
	TaskFailed  TaskStatus = "failed"
)

// Errors of the task operations.
var (
	ErrTaskNotFound = errors.New("store: task not found")
	// ErrTaskUUIDConflict: a task with this uuid exists, in any status and
	// for any user.
	ErrTaskUUIDConflict = errors.New("store: task uuid already exists")
	// ErrTaskNotPending: the task exists but was sent or failed.
	ErrTaskNotPending = errors.New("store: task is not pending")
	// ErrLeaseLost: the task is gone, was claimed by someone else after the
	// lease expired, or was rescheduled by its owner while being delivered.
	ErrLeaseLost = errors.New("store: task lease lost")
)

// Task is one row of the task table, its payload opened.
type Task struct {
	ID          int64
	UserID      string
	UUID        string
	MessageType push.MessageType
	// NextSendAt is the nominal time of the next occurrence.
	NextSendAt time.Time
	// LeaseUntil and RetryAfter are zero when not set.
	LeaseUntil time.Time
	RetryAfter time.Time
	Status     TaskStatus
	RetryCount int
	// LastError is the sanitized JSON object of the last failure, nil when
	// there is none.
	LastError json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
	// Payload is the task's JSON in plaintext, or nil with PayloadErr set
	// when it does not decrypt (the master key changed).
	Payload    json.RawMessage
	PayloadErr error
}

// DueAt is when t's occurrence may start: its time, or after a failed
// attempt the end of its backoff. It is t's key in tasks_due (with its id).
func (t Task) DueAt() time.Time {
	if t.RetryAfter.After(t.NextSendAt) {
		return t.RetryAfter
	}
	return t.NextSendAt
}

// Lease is a claim on a task for one occurrence. Until doubles as the
// claim's fencing token: the operations that finish a task apply only while
// the row still carries this lease and this occurrence.
type Lease struct {
	TaskID     int64
	Occurrence time.Time
	Until      time.Time
}

// Lease returns the lease a claimed task carries.
func (t Task) Lease() Lease {
	return Lease{TaskID: t.ID, Occurrence: t.NextSendAt, Until: t.LeaseUntil}
}

// NewTask is a task to insert.
type NewTask struct {
	UserID      string
	UUID        string
	MessageType push.MessageType
	NextSendAt  time.Time
	Payload     json.RawMessage // plaintext JSON; sealed with the user key
	// SupersedesUUID, when set, names a task of the same user deleted in the
	// same transaction, in any status.
	SupersedesUUID string
	// LeaseUntil, when set, inserts the task already claimed, for delivery
	// in the request that created it.
	LeaseUntil time.Time
	// Deferred marks NextSendAt as the end of the user's quiet hours that
	// the task waits for (DeferredTasks).
	Deferred bool
	// Owner, when set, is checked and recorded in the insert's transaction
	// (ErrOwnerRetired, see claimOwnership).
	Owner *OwnerClaim
}

const taskColumns = `id, user_id, uuid, payload, message_type, next_send_at, lease_until, retry_after,
	status, retry_count, last_error, created_at, updated_at`

// InsertTask inserts a pending task and returns the task it superseded, if
// any (DeletedTask.ID 0 when none). A uuid that exists already is
// ErrTaskUUIDConflict, and then nothing is deleted either.
func (s *Store) InsertTask(ctx context.Context, n NewTask) (Task, DeletedTask, error) {
	sealed := s.userKey(n.UserID).SealAtRest(n.Payload)
	now := millis(s.now())
	var t Task
	var superseded DeletedTask
	err := s.write(ctx, func(tx *sql.Tx) error {
		superseded = DeletedTask{}
		if n.SupersedesUUID != "" {
			var err error
			if superseded, err = s.deleteTask(ctx, tx, n.UserID, n.SupersedesUUID); err != nil && !errors.Is(err, ErrTaskNotFound) {
				return err
			}
		}
		var deferred any
		if n.Deferred {
			deferred = millis(n.NextSendAt)
		}
		// The unique index answers a taken uuid: a read of it first would,
		// on PostgreSQL, put a predicate lock on the index page that every
		// concurrent insert then conflicts with (a retried transaction in
		// about ten).
		row := tx.QueryRowContext(ctx, `INSERT INTO tasks (user_id, uuid, payload, message_type, next_send_at, lease_until, deferred_until, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (uuid) DO NOTHING RETURNING `+taskColumns,
			n.UserID, n.UUID, sealed, string(n.MessageType), millis(n.NextSendAt), nullMillis(n.LeaseUntil), deferred, now, now)
		var err error
		if t, err = s.scanTask(row); errors.Is(err, sql.ErrNoRows) {
			return ErrTaskUUIDConflict
		} else if err != nil {
			return err
		}
		if n.Owner != nil {
			return s.claimOwnership(ctx, tx, s.userKey(n.UserID), n.UserID, "task", n.UUID, n.Owner, false)
		}
		return nil
	})
	if errors.Is(err, ErrTaskUUIDConflict) {
		return Task{}, DeletedTask{}, err
	}
	if err != nil {
		return Task{}, DeletedTask{}, fmt.Errorf("store: insert task: %w", err)
	}
	return t, superseded, nil
}

// Task returns userID's task with this uuid, in any status.
func (s *Store) Task(ctx context.Context, userID, uuid string) (Task, error) {
	t, err := s.scanTask(s.reader.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM tasks WHERE uuid = ? AND user_id = ?`, uuid, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, ErrTaskNotFound
	}
	if err != nil {
		return Task{}, fmt.Errorf("store: task: %w", err)
	}
	return t, nil
}

// taskStatuses are the statuses a task's row may hold (the schema's CHECK).
var taskStatuses = []TaskStatus{TaskPending, TaskSent, TaskFailed}

// Tasks returns a page of userID's tasks, in status unless status is empty,
// ordered by next_send_at, and how many there are in all.
func (s *Store) Tasks(ctx context.Context, userID string, status TaskStatus, limit, offset int) ([]Task, int, error) {
	count, args := `SELECT count(*) FROM tasks WHERE user_id = ?`, []any{userID}
	statuses := taskStatuses
	if status != "" {
		count, args = count+` AND status = ?`, append(args, string(status))
		statuses = []TaskStatus{status}
	}
	var total int
	if err := s.reader.QueryRowContext(ctx, count, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: count tasks: %w", err)
	}
	rows, err := s.reader.QueryContext(ctx, tasksPageSQL(len(statuses)), tasksPageArgs(userID, statuses, limit, offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("store: tasks: %w", err)
	}
	tasks, err := s.scanTasks(rows)
	if err != nil {
		return nil, 0, fmt.Errorf("store: tasks: %w", err)
	}
	return tasks, total, nil
}

// tasksPageSQL reads a page of a user's tasks in one status, or in every
// status, by time (tasksPageArgs are its arguments). tasks_user keys a
// user's tasks by status, then time: one status's page is read in order,
// and a page of every status reads each status's range in order up to the
// page's end, never every task of the user, and merges them (PostgreSQL's
// Merge Append; SQLite sorts each range's rows read). A plain UNION ALL
// would be merged by SQLite alone: PostgreSQL 15 sorts every row of it.
func tasksPageSQL(statuses int) string {
	const inStatus = `SELECT ` + taskColumns + ` FROM tasks WHERE user_id = ? AND status = ? ORDER BY next_send_at, id`
	if statuses == 1 {
		return inStatus + ` LIMIT ? OFFSET ?`
	}
	ranges := make([]string, statuses)
	for i := range ranges {
		ranges[i] = `SELECT * FROM (` + inStatus + ` LIMIT ?) AS status_` + strconv.Itoa(i)
	}
	return `SELECT * FROM (` + strings.Join(ranges, ` UNION ALL `) + `) AS ranges ORDER BY next_send_at, id LIMIT ? OFFSET ?`
}

func tasksPageArgs(userID string, statuses []TaskStatus, limit, offset int) []any {
	if len(statuses) == 1 {
		return []any{userID, string(statuses[0]), limit, offset}
	}
	var args []any
	for _, status := range statuses {
		args = append(args, userID, string(status), limit+offset)
	}
	return append(args, limit, offset)
}

// TaskUpdate is what UpdatePendingTask writes.
type TaskUpdate struct {
	Payload    json.RawMessage // plaintext JSON
	NextSendAt time.Time       // zero: unchanged
	// ReleaseLease clears the task's lease: the scheduler took back its
	// claim of a task not due yet (scheduler.Scheduler.Unclaim).
	ReleaseLease bool
}

// UpdatePendingTask reads userID's pending task with this uuid, lets update
// compute its new payload and next time, and writes them with the retry
// state reset, all in one transaction, so nothing can change the row in
// between. A task that does not exist is ErrTaskNotFound, one that is no
// longer pending ErrTaskNotPending; an error from update is returned as is.
// A lease is kept unless the update releases it: a delivery under way
// finishes, and if the update moved the task, the delivery leaves the new
// time alone (see CompleteTask).
func (s *Store) UpdatePendingTask(ctx context.Context, userID, uuid string, update func(Task) (TaskUpdate, error)) (Task, error) {
	var t Task
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		t, err = s.scanTask(tx.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM tasks WHERE uuid = ? AND user_id = ?`, uuid, userID))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return ErrTaskNotFound
		case err != nil:
			return err
		case t.Status != TaskPending:
			return ErrTaskNotPending
		}
		u, err := update(t)
		if err != nil {
			return err
		}
		next := t.NextSendAt
		if !u.NextSendAt.IsZero() {
			next = u.NextSendAt
		}
		t, err = s.scanTask(tx.QueryRowContext(ctx, `UPDATE tasks SET payload = ?, next_send_at = ?, retry_count = 0,
			retry_after = NULL, lease_until = CASE WHEN ? THEN NULL ELSE lease_until END, updated_at = ? WHERE id = ? RETURNING `+taskColumns,
			s.userKey(userID).SealAtRest(u.Payload), millis(next), u.ReleaseLease, millis(s.now()), t.ID))
		return err
	})
	return t, err
}

// DeletedTask is a task a cancel or a supersede deleted, and what it was
// doing then.
type DeletedTask struct {
	ID     int64
	Status TaskStatus
	// Delivering: an occurrence was being delivered (a live lease), which
	// the deleting transaction told every instance to stop (the
	// dialect's NotifyCancel; the scheduler's Cancel on this one).
	Delivering bool
}

// DeleteTask deletes userID's task with this uuid, in any status, and says
// what it was doing; ErrTaskNotFound when there is none.
func (s *Store) DeleteTask(ctx context.Context, userID, uuid string) (DeletedTask, error) {
	var d DeletedTask
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		d, err = s.deleteTask(ctx, tx, userID, uuid)
		return err
	})
	switch {
	case errors.Is(err, ErrTaskNotFound):
		return DeletedTask{}, err
	case err != nil:
		return DeletedTask{}, fmt.Errorf("store: delete task: %w", err)
	}
	return d, nil
}

// deleteTask deletes userID's task with this uuid in tx and, when an
// occurrence of it was being delivered, notifies the other instances in the
// same transaction, so the notification leaves only if the delete commits.
func (s *Store) deleteTask(ctx context.Context, tx *sql.Tx, userID, uuid string) (DeletedTask, error) {
	var d DeletedTask
	var status string
	var lease sql.NullInt64
	err := tx.QueryRowContext(ctx, `DELETE FROM tasks WHERE uuid = ? AND user_id = ? RETURNING id, status, lease_until`,
		uuid, userID).Scan(&d.ID, &status, &lease)
	if errors.Is(err, sql.ErrNoRows) {
		return DeletedTask{}, ErrTaskNotFound
	}
	if err != nil {
		return DeletedTask{}, err
	}
	d.Status = TaskStatus(status)
	d.Delivering = d.Status == TaskPending && lease.Valid && lease.Int64 > millis(s.now())
	if d.Delivering && s.dialect.NotifyCancel != "" {
		if _, err := tx.ExecContext(ctx, s.dialect.NotifyCancel, strconv.FormatInt(d.ID, 10)); err != nil {
			return DeletedTask{}, err
		}
	}
	return d, nil
}

// ClaimDueTasks leases up to limit pending tasks that are due at now and
// neither leased nor waiting to retry, until now+ttl, and returns them
// ordered by next_send_at. One statement (the dialect's): two claimers
// never get the same task.
func (s *Store) ClaimDueTasks(ctx context.Context, now time.Time, ttl time.Duration, limit int) ([]Task, error) {
	return s.ClaimDueTasksExcept(ctx, now, ttl, limit, nil)
}

// MaxClaimSkipUsers bounds the users one ClaimDueTasksExcept passes over.
const MaxClaimSkipUsers = 1000

// ClaimDueTasksExcept is ClaimDueTasks passing over the tasks of the users
// in skip: the scheduler names the users who have as many tasks in delivery
// as it lets one user have, so one user's backlog cannot take every slot.
func (s *Store) ClaimDueTasksExcept(ctx context.Context, now time.Time, ttl time.Duration, limit int, skip []string) ([]Task, error) {
	return s.ClaimTasksDueBy(ctx, now, now, ttl, limit, skip)
}

// ClaimTasksDueBy is ClaimDueTasksExcept taking, besides the due tasks,
// those falling due by dueBy (not before now): the scheduler claims ahead
// and starts each at its time. A lease is taken over only once it has ended
// at now, however far ahead the claim looks.
func (s *Store) ClaimTasksDueBy(ctx context.Context, now, dueBy time.Time, ttl time.Duration, limit int, skip []string) ([]Task, error) {
	if dueBy.Before(now) {
		dueBy = now
	}
	if len(skip) > MaxClaimSkipUsers {
		return nil, fmt.Errorf("store: claim due tasks: %d users to skip, limit %d", len(skip), MaxClaimSkipUsers)
	}
	if skip == nil {
		skip = []string{} // [], not null
	}
	skipped, err := json.Marshal(skip)
	if err != nil {
		return nil, err
	}
	query := s.claimDueSQL()
	args := []any{millis(now.Add(ttl)), millis(s.now()), millis(dueBy), string(skipped), limit, millis(now)}
	afterAt, afterID, boundGen := s.bound.start(now)
	if s.dialect.ClaimAfter {
		args = append(args, afterAt, afterID)
	}
	var tasks []Task
	var prefs map[string]Preferences
	gen := s.claimed.generation()
	err = s.writeLocked(ctx, func(tx *sql.Tx) error {
		if s.dialect.ClaimPlan != "" {
			if _, err := tx.ExecContext(ctx, s.dialect.ClaimPlan); err != nil {
				return err
			}
		}
		rows, err := s.txQuery(ctx, tx, query, args...)
		if err != nil {
			return err
		}
		if tasks, err = s.scanTasks(rows); err != nil {
			return err
		}
		prefs, err = s.readClaimedPrefs(ctx, tx, tasks)
		return err
	})
	if err != nil {
		s.bound.drop()
		return nil, fmt.Errorf("store: claim due tasks: %w", err)
	}
	s.bound.advance(boundGen, tasks, limit, len(skip) > 0, now)
	s.claimed.put(gen, time.Now(), prefs)
	sortTasks(tasks)
	return tasks, nil
}

// claimDueSQL and nextClaimableSQL are the dialect's hot task statements,
// prepared at Open with those of preparedSQL and preparedRead.
func (s *Store) claimDueSQL() string { return s.dialect.ClaimDueTasks + taskColumns }

func (s *Store) nextClaimableSQL() string { return s.dialect.NextClaimable }

// NextClaimableAt returns the earliest time a pending task becomes
// claimable, and false when there is no pending task. The scheduler sleeps
// until then rather than a whole tick.
func (s *Store) NextClaimableAt(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullInt64
	err := s.readRow(ctx, s.nextClaimableSQL()).Scan(&next)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("store: next claimable task: %w", err)
	}
	return fromMillis(next.Int64), next.Valid, nil
}

// The fenced statements that finish a claimed occurrence (see finish),
// prepared once on the writer.
const leaseFence = ` WHERE id = ? AND lease_until = ? AND next_send_at = ?`

var (
	renewLeaseSQL        = preparedSQL(`UPDATE tasks SET lease_until = ?, updated_at = ?` + leaseFence)
	completeOneOffSQL    = preparedSQL(`DELETE FROM tasks` + leaseFence)
	completeRecurringSQL = preparedSQL(`UPDATE tasks SET next_send_at = ?, lease_until = NULL, retry_after = NULL,
		retry_count = 0, last_error = NULL, updated_at = ?` + leaseFence)
	rescheduleTaskSQL = preparedSQL(`UPDATE tasks SET next_send_at = ?, lease_until = NULL, retry_after = NULL,
		retry_count = 0, last_error = ?, updated_at = ?` + leaseFence)
	backOffTaskSQL = preparedSQL(`UPDATE tasks SET retry_after = ?, retry_count = retry_count + 1, lease_until = NULL,
		last_error = ?, updated_at = ?` + leaseFence)
	failTaskSQL = preparedSQL(`UPDATE tasks SET status = 'failed', retry_count = ?, lease_until = NULL, retry_after = NULL,
		last_error = ?, updated_at = ?` + leaseFence)
)

// RenewLease extends l to until and returns the renewed lease, or
// ErrLeaseLost.
func (s *Store) RenewLease(ctx context.Context, l Lease, until time.Time) (Lease, error) {
	err := s.finish(ctx, l, renewLeaseSQL, millis(until), millis(s.now()))
	if err != nil {
		return l, err
	}
	l.Until = fromMillis(millis(until))
	return l, nil
}

// ReleaseLease gives l up without changing anything else, so the task is
// claimable again at once. A lease already lost is not an error.
func (s *Store) ReleaseLease(ctx context.Context, l Lease) error {
	if err := s.writeLocked(ctx, func(tx *sql.Tx) error { return s.releaseLease(ctx, tx, l) }); err != nil {
		return fmt.Errorf("store: release lease: %w", err)
	}
	return nil
}

var releaseLeaseSQL = preparedSQL(`UPDATE tasks SET lease_until = NULL, updated_at = ? WHERE id = ? AND lease_until = ?`)

// releaseLease clears l's lease in tx, if l still holds it.
func (s *Store) releaseLease(ctx context.Context, tx *sql.Tx, l Lease) error {
	_, err := s.txExec(ctx, tx, releaseLeaseSQL, millis(s.now()), l.TaskID, millis(l.Until))
	return err
}

// CompleteTask records a delivered occurrence: a one-off task (next zero) is
// deleted, a recurring one moves to next with its lease, retry state and
// last error cleared. last is the bookkeeping of the occurrence's last push
// (RecordDeliveries), written in the same transaction, whatever becomes of
// the task: the push went out. If the task's owner rescheduled it while it
// was being delivered, the new time stands: only the lease is released, and
// the result is ErrLeaseLost. One-off occurrences are completed in batches
// (completions.go).
func (s *Store) CompleteTask(ctx context.Context, l Lease, next time.Time, last push.Bookkeeping) error {
	w, err := s.prepareBookkeeping(last)
	if err != nil {
		return fmt.Errorf("store: task %d: %w", l.TaskID, err)
	}
	if next.IsZero() {
		return s.completions.write(ctx, completion{l: l, w: w})
	}
	with := func(tx *sql.Tx) error { return w.write(ctx, tx) }
	return s.finishWith(ctx, l, with, completeRecurringSQL, millis(next), millis(s.now()))
}

// RescheduleTask skips the leased occurrence of a recurring task: it moves
// to next with its lease and retry state cleared and lastError recorded.
func (s *Store) RescheduleTask(ctx context.Context, l Lease, next time.Time, lastError json.RawMessage) error {
	if err := s.finish(ctx, l, rescheduleTaskSQL, millis(next), string(lastError), millis(s.now())); err != nil {
		return err
	}
	s.recordTaskFailed(ctx, l, true, lastError)
	return nil
}

// BackOffTask records a failed attempt that will be retried at retryAfter:
// retry_count goes up by one, the lease is released and next_send_at stays.
func (s *Store) BackOffTask(ctx context.Context, l Lease, retryAfter time.Time, lastError json.RawMessage) error {
	return s.finish(ctx, l, backOffTaskSQL, millis(retryAfter), string(lastError), millis(s.now()))
}

// FailTask marks a one-off task failed for good, with its retry count and
// last error.
func (s *Store) FailTask(ctx context.Context, l Lease, retryCount int, lastError json.RawMessage) error {
	if err := s.finish(ctx, l, failTaskSQL, retryCount, string(lastError), millis(s.now())); err != nil {
		return err
	}
	s.recordTaskFailed(ctx, l, false, lastError)
	return nil
}

// finish runs statement (one of the fenced statements below) on the task l
// leases, fenced by the lease and the occurrence. When
// the fence fails but the lease is still held (the owner moved the task), the
// lease is released. Either way the result is then ErrLeaseLost.
func (s *Store) finish(ctx context.Context, l Lease, statement string, args ...any) error {
	return s.finishWith(ctx, l, nil, statement, args...)
}

// finishWith is finish that first runs with (when not nil) in the same
// transaction. The fence is the statement's own WHERE, so the write needs
// no more than READ COMMITTED (writeLocked): an UPDATE or DELETE there
// waits for a concurrent change to the row and checks its WHERE again.
func (s *Store) finishWith(ctx context.Context, l Lease, with func(*sql.Tx) error, statement string, args ...any) error {
	var lost bool
	err := s.writeLocked(ctx, func(tx *sql.Tx) error {
		var err error
		lost, err = s.finishIn(ctx, tx, l, with, statement, args...) // the write may run more than once
		return err
	})
	switch {
	case err != nil:
		return fmt.Errorf("store: task %d: %w", l.TaskID, err)
	case lost:
		return ErrLeaseLost
	}
	return nil
}

// finishIn is finishWith's write, in tx: lost says the fence failed (and
// the lease, if still held, was released).
func (s *Store) finishIn(ctx context.Context, tx *sql.Tx, l Lease, with func(*sql.Tx) error, statement string, args ...any) (lost bool, err error) {
	if with != nil {
		if err := with(tx); err != nil {
			return false, err
		}
	}
	res, err := s.txExec(ctx, tx, statement, append(args, l.TaskID, millis(l.Until), millis(l.Occurrence))...)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return false, err
	}
	return true, s.releaseLease(ctx, tx, l)
}

// DeleteFinishedTasks deletes sent and failed tasks last updated before
// cutoff and returns how many it deleted.
func (s *Store) DeleteFinishedTasks(ctx context.Context, cutoff time.Time) (int, error) {
	return s.execCount(ctx, "delete finished tasks", `DELETE FROM tasks WHERE status IN ('sent', 'failed') AND updated_at < ?`, millis(cutoff))
}

type rowScanner interface {
	Scan(dest ...any) error
}

// scanTask reads one row of taskColumns and opens its payload.
func (s *Store) scanTask(row rowScanner) (Task, error) {
	r := new(taskRow) // taskrow.go
	t := &r.t
	if err := row.Scan(&t.ID, &t.UserID, &t.UUID, &r.sealed, &r.messageType, &r.next, &r.lease, &r.retry,
		&r.status, &t.RetryCount, &r.lastError, &r.created, &r.updated); err != nil {
		return Task{}, err
	}
	t.MessageType, t.Status = push.MessageType(r.messageType), TaskStatus(r.status)
	t.NextSendAt, t.CreatedAt, t.UpdatedAt = fromMillis(r.next), fromMillis(r.created), fromMillis(r.updated)
	if r.lease.Valid {
		t.LeaseUntil = fromMillis(r.lease.Int64)
	}
	if r.retry.Valid {
		t.RetryAfter = fromMillis(r.retry.Int64)
	}
	if r.lastError.Valid {
		t.LastError = json.RawMessage(r.lastError.String)
	}
	if plaintext, err := s.userKey(t.UserID).OpenAtRest(r.sealed); err != nil {
		t.PayloadErr = fmt.Errorf("task %d payload does not decrypt: %w", t.ID, err)
	} else {
		t.Payload = plaintext
	}
	return *t, nil
}

// scanTasks reads every row before returning, so the caller may issue the
// next statement on the writer's one connection.
func (s *Store) scanTasks(rows *sql.Rows) ([]Task, error) {
	defer rows.Close()
	var tasks []Task
	for rows.Next() {
		t, err := s.scanTask(rows)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	return tasks, rows.Err()
}

// sortTasks orders claimed tasks by next_send_at then id: RETURNING gives
// rows in no promised order.
func sortTasks(tasks []Task) {
	slices.SortFunc(tasks, func(a, b Task) int {
		return cmp.Or(a.NextSendAt.Compare(b.NextSendAt), cmp.Compare(a.ID, b.ID))
	})
}

// nullMillis stores a zero time as NULL.
func nullMillis(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return millis(t)
}
