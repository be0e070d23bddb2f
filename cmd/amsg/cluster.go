package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"log/slog"
	"time"

	"amsg/store"
)

// An instance is one amsg process among those sharing a database: it beats
// a heartbeat into the instances table (so another instance can tell its
// /continue claims from a dead one's), listens for task wake-ups from the
// others, and campaigns each beat for the leaderships, which is the one
// place they are decided (scheduler.Leadership): the housekeeping, which
// one instance does at a time (pruning, read by the scheduler, and resuming
// the broadcasts of dead instances, told to scheduler.Broadcasts), and the
// webhooks' sending (read by the dispatcher). On SQLite the one process is
// all of that alone.

const (
	// DefaultInstanceHeartbeat is how often an instance beats and campaigns.
	DefaultInstanceHeartbeat = 10 * time.Second
	// missedHeartbeats is how many beats an instance may miss before the
	// others count it dead.
	missedHeartbeats = 3
	// housekeepingLeader names the leadership of the housekeeping.
	housekeepingLeader = "housekeeping"
	// leadershipHold is how many beats a campaign's decision holds: fewer
	// than missedHeartbeats, the leases' ttl, so an instance stops believing
	// it leads before another can take over.
	leadershipHold = missedHeartbeats - 1
)

// clusterConfig holds the settings of instances sharing a database.
type clusterConfig struct {
	Heartbeat time.Duration
}

func (c *clusterConfig) register(fs *flag.FlagSet) {
	fs.DurationVar(&c.Heartbeat, "instance-heartbeat", DefaultInstanceHeartbeat,
		"how often an instance records that it runs and campaigns for the housekeeping; one silent for three beats is dead")
}

// newInstanceID names this process: random, so a restart is a new instance
// and the claims of the old one die with it.
func newInstanceID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// liveness answers the agent loop's question about a claim's instance from
// the heartbeats.
type liveness struct {
	store     *store.Store
	heartbeat time.Duration
	now       func() time.Time
}

func (l liveness) InstanceAlive(ctx context.Context, instance string) (bool, error) {
	return l.store.InstanceAlive(ctx, instance, l.now().Add(-missedHeartbeats*l.heartbeat))
}

// joinInstances registers this instance. A SQLite data directory has one
// process (its lock says so), so every instance recorded before is dead.
func (s *server) joinInstances(ctx context.Context) error {
	if s.cfg.DatabaseURL == "" {
		if _, err := s.store.DeleteStaleInstances(ctx, s.now().Add(time.Hour)); err != nil {
			return err
		}
	}
	return s.store.RegisterInstance(ctx, s.instance)
}

// runInstance beats and campaigns until ctx ends; then it leaves the
// instances table and the leadership.
func (s *server) runInstance(ctx context.Context) {
	beat := time.NewTicker(s.cfg.Cluster.Heartbeat)
	defer beat.Stop()
	leading, campaigned := false, false
	for {
		if err := s.store.HeartbeatInstance(ctx, s.instance); err != nil && ctx.Err() == nil {
			s.log.Warn("instance heartbeat failed", "err", err)
		}
		leads, err := s.housekeeping.Campaign(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("electing the housekeeper failed", "err", err)
		}
		if _, err := s.webhooksLeadership.Campaign(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("electing the webhook sender failed", "err", err)
		}
		if leads != leading || !campaigned {
			leading, campaigned = leads, true
			s.log.Info("housekeeping leadership", "instance", s.instance, "leads", leads)
		}
		select {
		case <-ctx.Done():
			stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := s.store.DeleteInstance(stop, s.instance); err != nil {
				s.log.Warn("leaving the instances table failed", "err", err)
			}
			cancel()
			if err := s.housekeeping.Release(); err != nil {
				s.log.Warn("releasing the housekeeping failed", "err", err)
			}
			return
		case <-beat.C:
		}
	}
}

// watchTasks wakes the scheduler when another instance makes a task due
// before its next tick, until ctx ends.
func (s *server) watchTasks(ctx context.Context) {
	s.store.WatchTasks(ctx, s.cfg.Cluster.Heartbeat, s.cfg.Tick, s.scheduler.Wake, func(id int64) { s.scheduler.Cancel(id) })
}

// logPollOnly says, at start, that the instances reach PostgreSQL through
// a transaction pooler alone and what that costs: a task another instance
// makes due sooner is found by the next tick instead of at once. Detected
// rather than declared, it names the settings that choose.
func logPollOnly(log *slog.Logger, cfg config, st *store.Store) {
	if !st.PollOnly() {
		return
	}
	attrs := []any{"tick", cfg.Tick, "leaderLease", missedHeartbeats * cfg.Cluster.Heartbeat}
	if cfg.DatabasePooler == "" {
		log.Warn("AMSG_DATABASE_URL goes through a transaction pooler (PgBouncer with pool_mode=transaction?): poll-only; "+
			"set AMSG_DATABASE_POOLER=transaction to say so, or AMSG_DATABASE_DIRECT_URL for wake-ups by LISTEN", attrs...)
		return
	}
	log.Info("database: poll-only behind a transaction pooler", attrs...)
}
