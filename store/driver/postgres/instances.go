package postgres

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"amsg/store/driver"

	"github.com/jackc/pgx/v5"
)

// Leader campaigns for name with a session advisory lock, held on a
// connection of its own for as long as it leads (ntfy's leader); in
// poll-only mode with a lease of ttl (leader_lease.go).
func (db *DB) Leader(name string, ttl time.Duration) driver.Leader {
	if db.pollOnly {
		return newLeaseLeader(db.pool, name, ttl)
	}
	return &leader{db: db, name: name}
}

type leader struct {
	db   *DB
	name string

	mu   sync.Mutex
	conn *sql.Conn // holds the lock while leading
}

func (l *leader) Check(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		if err := l.conn.PingContext(ctx); err == nil {
			return true, nil
		}
		// The session, and with it the lock, may be gone: never reuse it.
		discard(l.conn)
		l.conn = nil
	}
	conn, err := l.db.session.Conn(ctx)
	if err != nil {
		return false, err
	}
	var got bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(`+lockKey+`)`, l.name).Scan(&got); err != nil {
		discard(conn)
		return false, fmt.Errorf("leader %s: %w", l.name, err)
	}
	if !got {
		return false, conn.Close()
	}
	l.conn = conn
	return true, nil
}

func (l *leader) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Unlock before the connection goes back to the pool, where the session
	// lock would otherwise stay held.
	_, err := l.conn.ExecContext(ctx, `SELECT pg_advisory_unlock(`+lockKey+`)`, l.name)
	if err != nil {
		discard(l.conn)
	} else {
		err = l.conn.Close()
	}
	l.conn = nil
	return err
}

// discard closes conn and keeps the pool from reusing its session.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return sqldriver.ErrBadConn })
	_ = conn.Close()
}

// ListenTasks holds a connection of its own in LISTEN on the schema's task
// channel and calls wake for each wake-up of a task claimable within
// horizon from now (wakeUpsSchema), and once on connecting, for what it
// may have missed before, and cancelled for each cancel (NotifyCancel's
// payload). It returns nil when ctx ends, and the connection's error when
// it fails. In poll-only mode it only waits for ctx.
func (db *DB) ListenTasks(ctx context.Context, horizon time.Duration, wake func(), cancelled func(int64)) error {
	if db.pollOnly {
		<-ctx.Done()
		return nil
	}
	err := db.listen(ctx, horizon, wake, cancelled)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (db *DB) listen(ctx context.Context, horizon time.Duration, wake func(), cancelled func(int64)) error {
	conn, err := pgx.ConnectConfig(ctx, db.listenConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{schema + "." + tasksChannel}.Sanitize()); err != nil {
		return err
	}
	wake()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if id, ok := strings.CutPrefix(n.Payload, cancelPrefix); ok {
			if taskID, err := strconv.ParseInt(id, 10, 64); err == nil {
				cancelled(taskID)
			}
			continue
		}
		if later(n.Payload, horizon) {
			continue
		}
		wake()
	}
}

// later reports that payload, a wake-up's, names a task claimable more
// than horizon from now: the scheduler's timer, which waits at most
// horizon, finds it then. Each instance judges by its own clock, as its
// claims do. Any other payload (an older amsg's is empty) wakes.
func later(payload string, horizon time.Duration) bool {
	at, ok := strings.CutPrefix(payload, duePrefix)
	if !ok || horizon <= 0 {
		return false
	}
	ms, err := strconv.ParseInt(at, 10, 64)
	return err == nil && time.UnixMilli(ms).After(time.Now().Add(horizon))
}
