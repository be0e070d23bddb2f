package store

import (
	"context"
	"fmt"
	"time"
)

// The instances table lists the amsg processes on this database, each with
// a heartbeat, so that one process can tell whether work another one claimed
// (a /continue round) is still under way or died with it.

// RegisterInstance records the instance id as started and alive now.
func (s *Store) RegisterInstance(ctx context.Context, id string) error {
	now := millis(s.now())
	_, err := s.writer.ExecContext(ctx, `INSERT INTO instances (id, started_at, heartbeat_at) VALUES (?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`, id, now, now)
	if err != nil {
		return fmt.Errorf("store: register instance: %w", err)
	}
	return nil
}

// HeartbeatInstance records that the instance id is alive now.
func (s *Store) HeartbeatInstance(ctx context.Context, id string) error {
	n, err := s.execCount(ctx, "instance heartbeat", `UPDATE instances SET heartbeat_at = ? WHERE id = ?`, millis(s.now()), id)
	if err == nil && n == 0 {
		// Pruned while it could not beat (a long pause): it is back.
		return s.RegisterInstance(ctx, id)
	}
	return err
}

// InstanceAlive reports whether the instance id has beaten since cutoff.
func (s *Store) InstanceAlive(ctx context.Context, id string, cutoff time.Time) (bool, error) {
	var n int
	err := s.reader.QueryRowContext(ctx, `SELECT count(*) FROM instances WHERE id = ? AND heartbeat_at >= ?`, id, millis(cutoff)).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("store: instance alive: %w", err)
	}
	return n > 0, nil
}

// DeleteInstance removes the instance id: it stopped.
func (s *Store) DeleteInstance(ctx context.Context, id string) error {
	_, err := s.execCount(ctx, "delete instance", `DELETE FROM instances WHERE id = ?`, id)
	return err
}

// DeleteStaleInstances removes the instances that have not beaten since
// cutoff and returns how many.
func (s *Store) DeleteStaleInstances(ctx context.Context, cutoff time.Time) (int, error) {
	return s.execCount(ctx, "delete stale instances", `DELETE FROM instances WHERE heartbeat_at < ?`, millis(cutoff))
}

// Leader is a campaign for one leadership among the processes on the
// database: on SQLite the one process always leads; on PostgreSQL a session
// advisory lock elects one (a lease row behind a transaction pooler alone),
// and a leader's death frees it for the others.
type Leader interface {
	// Check reports whether this process leads now, taking the leadership
	// when it is free.
	Check(ctx context.Context) (bool, error)
	// Release gives it up.
	Release() error
}

// Leader returns the campaign for the leadership called name. A leader
// that stops checking (it died) loses it within ttl at the latest.
func (s *Store) Leader(name string, ttl time.Duration) Leader { return s.db.Leader(name, ttl) }

// PollOnly reports that the database is PostgreSQL reached through a
// transaction pooler alone: leadership is a lease, and other instances'
// new tasks are found by the scheduler's tick, without wake-ups.
func (s *Store) PollOnly() bool { return s.db.PollOnly() }

// WatchTasks calls wake whenever another process on the database may have
// made a task claimable within horizon (the scheduler's tick: its timer
// finds a task due later), and cancelled when
// another process deleted a task whose occurrence was being delivered
// (DeleteTask), until ctx ends. It reconnects after a failure, waiting
// retry. A missed wake-up costs at most the scheduler's own timer, a missed
// cancel at most a lease heartbeat.
func (s *Store) WatchTasks(ctx context.Context, retry, horizon time.Duration, wake func(), cancelled func(taskID int64)) {
	// Every wake-up, the first on connecting included, drops the claim's
	// bound: a task may have become claimable before it (claimbound.go).
	heard := func() {
		s.bound.listen(true)
		wake()
	}
	for {
		err := s.db.ListenTasks(ctx, horizon, heard, cancelled)
		s.bound.listen(false)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("store: listening for task wake-ups failed; retrying", "err", err, "in", retry)
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
