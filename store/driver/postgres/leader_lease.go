package postgres

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"amsg/store/driver"
)

// Poll-only mode: amsg reaches PostgreSQL only through a transaction pooler
// (PgBouncer's pool_mode=transaction) and has no direct URL. A server
// session then belongs to one transaction at a time, so nothing may live in
// a session across transactions: no named prepared statements (the pool
// keeps them on the client), no session advisory lock (leadership is a
// lease row with an expiry, renewed by the leader and fenced by an epoch;
// the start lock a transaction-scoped advisory lock held by an open
// transaction) and no LISTEN (the scheduler finds work by its tick alone).

// leaseSchema: one row per leadership held by lease, in poll-only mode.
// expires_at is in milliseconds of the database's clock, so the instances'
// clocks never have to agree.
const leaseSchema = `
CREATE TABLE leader_leases (
	name       TEXT PRIMARY KEY,
	holder     TEXT NOT NULL,
	epoch      BIGINT NOT NULL,
	expires_at BIGINT NOT NULL
);
`

// dbNowMillis is the database's clock in milliseconds; clock_timestamp(),
// not now(), which is the start of a transaction a pooler may have held.
const dbNowMillis = `CAST(extract(epoch FROM clock_timestamp()) * 1000 AS BIGINT)`

// takeLease takes the lease called $1 for holder $2 until $3 ms from now,
// when it is free or expired, or renews it when $2 holds it at epoch $4. A
// takeover starts a new epoch, so a holder that lost its lease (paused past
// its expiry while another took it) can never renew it again: the fence.
// It returns the epoch held, or no row when another holds the lease.
const takeLease = `INSERT INTO leader_leases (name, holder, epoch, expires_at)
	VALUES ($1, $2, 1, ` + dbNowMillis + ` + $3)
	ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at,
		epoch = CASE WHEN leader_leases.holder = excluded.holder AND leader_leases.epoch = $4
			THEN leader_leases.epoch ELSE leader_leases.epoch + 1 END
	WHERE (leader_leases.holder = excluded.holder AND leader_leases.epoch = $4)
		OR leader_leases.expires_at <= ` + dbNowMillis + `
	RETURNING epoch`

// leaseLeader is a campaign held by a lease row: Check takes or renews the
// lease for ttl. The caller checks more often than ttl (the instance
// heartbeat is a third of it), and believes it leads only until ttl after
// its last renewal was sent, as measured by its own clock, which is never
// later than the database's expiry.
type leaseLeader struct {
	pool   *sql.DB
	name   string
	holder string // random: this campaign, not this host
	ttl    time.Duration
	now    func() time.Time

	mu    sync.Mutex
	epoch int64     // 0: not held
	until time.Time // local deadline of the lease held
}

func newLeaseLeader(pool *sql.DB, name string, ttl time.Duration) *leaseLeader {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &leaseLeader{pool: pool, name: name, holder: hex.EncodeToString(b[:]), ttl: ttl, now: time.Now}
}

func (l *leaseLeader) Check(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sent := l.now()
	var epoch int64
	err := l.pool.QueryRowContext(ctx, takeLease, l.name, l.holder, l.ttl.Milliseconds(), l.epoch).Scan(&epoch)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		l.epoch = 0
		return false, nil
	case err != nil:
		// Unknown whether the renewal landed: lead no longer than the
		// lease already held.
		leads := l.epoch != 0 && l.now().Before(l.until)
		return leads, fmt.Errorf("leader %s: %w", l.name, err)
	}
	l.epoch, l.until = epoch, sent.Add(l.ttl)
	return true, nil
}

func (l *leaseLeader) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.epoch == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := l.pool.ExecContext(ctx, `DELETE FROM leader_leases WHERE name = $1 AND holder = $2 AND epoch = $3`,
		l.name, l.holder, l.epoch)
	l.epoch = 0
	if err != nil {
		return fmt.Errorf("leader %s: release: %w", l.name, err)
	}
	return nil
}

// exclusiveInTransaction runs fn holding a transaction-scoped advisory lock,
// in a transaction kept open until fn returns: a transaction pooler keeps
// one server session for it, and the lock ends with it whatever happens to
// this process.
func (db *DB) exclusiveInTransaction(ctx context.Context, name string, fn func() error) error {
	tx, err := db.pool.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := lockPatiently(ctx, db.log, tx, true, `SELECT pg_advisory_xact_lock(`+lockKey+`)`, name, lockWaitReport); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	fnErr := fn()
	return errors.Join(fnErr, tx.Commit())
}

// PollOnly reports that the database is reached through a transaction
// pooler alone: leadership by lease, no LISTEN wake-ups.
func (db *DB) PollOnly() bool { return db.pollOnly }

var _ driver.Leader = (*leaseLeader)(nil)
