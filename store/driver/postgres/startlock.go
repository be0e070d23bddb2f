package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// lockWaitReport is how long Exclusive waits for its lock before it logs
// the sessions holding it, and then again after each such wait: an
// instance that waits at start for another says for whom, rather than
// hanging in silence.
const lockWaitReport = 15 * time.Second

// execer is a connection or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// lockPatiently runs lock, an advisory lock statement taking name, on q
// with a lock timeout of wait. Each time the timeout expires it logs the
// holders and tries again, until ctx ends. In a transaction (inTx) each
// attempt runs inside a savepoint, so that a timed-out attempt leaves the
// transaction usable, and sets the timeout with SET LOCAL; on a session the
// timeout is set once and reset however the wait ends, so the connection
// goes back to its pool with the server's.
func lockPatiently(ctx context.Context, log *slog.Logger, q execer, inTx bool, lock, name string, wait time.Duration) (err error) {
	setLocal := ""
	if inTx {
		setLocal = fmt.Sprintf(`SET LOCAL lock_timeout = %d`, wait.Milliseconds())
	} else {
		if _, err := q.ExecContext(ctx, fmt.Sprintf(`SET lock_timeout = %d`, wait.Milliseconds())); err != nil {
			return fmt.Errorf("advisory lock %s: %w", name, err)
		}
		defer func() {
			if _, resetErr := q.ExecContext(context.WithoutCancel(ctx), `RESET lock_timeout`); resetErr != nil {
				err = errors.Join(err, fmt.Errorf("advisory lock %s: %w", name, resetErr))
			}
		}()
	}
	began := time.Now()
	for {
		err := tryLock(ctx, q, setLocal, lock, name)
		if err == nil {
			return nil
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55P03" { // lock_not_available
			return fmt.Errorf("advisory lock %s: %w", name, err)
		}
		if inTx {
			if _, err := q.ExecContext(ctx, `ROLLBACK TO SAVEPOINT amsg_lock_wait`); err != nil {
				return fmt.Errorf("advisory lock %s: %w", name, err)
			}
		}
		log.Warn("postgres: still waiting for a lock another session holds",
			"lock", name, "waited", time.Since(began).Round(time.Second), "holders", lockHolders(ctx, q, name))
	}
}

// tryLock is one attempt of lockPatiently: in a transaction (setLocal
// given) inside a savepoint that sets its lock timeout.
func tryLock(ctx context.Context, q execer, setLocal, lock, name string) error {
	if setLocal != "" {
		for _, s := range []string{`SAVEPOINT amsg_lock_wait`, setLocal} {
			if _, err := q.ExecContext(ctx, s); err != nil {
				return err
			}
		}
	}
	_, err := q.ExecContext(ctx, lock, name)
	return err
}

// lockHolders describes the sessions holding the advisory lock name in
// this database and schema, for the log: process id, application, client
// address, state and since when; or why it could not tell.
func lockHolders(ctx context.Context, q execer, name string) string {
	rows, err := q.QueryContext(ctx, `SELECT a.pid, a.application_name, coalesce(host(a.client_addr), 'local'),
		coalesce(a.state, ''), coalesce(a.state_change, a.backend_start)
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND l.classid = hashtext(current_schema())::oid AND l.objid = hashtext(?)::oid`, name)
	if err != nil {
		return "unknown: " + err.Error()
	}
	defer rows.Close()
	var holders []string
	for rows.Next() {
		var (
			pid              int
			app, addr, state string
			since            time.Time
		)
		if err := rows.Scan(&pid, &app, &addr, &state, &since); err != nil {
			return "unknown: " + err.Error()
		}
		holders = append(holders, fmt.Sprintf("pid %d (%q from %s, %s since %s)", pid, app, addr, state, since.UTC().Format(time.RFC3339)))
	}
	if err := rows.Err(); err != nil {
		return "unknown: " + err.Error()
	}
	if len(holders) == 0 {
		return "none visible (released meanwhile, or another schema's)"
	}
	return strings.Join(holders, ", ")
}
