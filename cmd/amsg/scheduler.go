package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"sync"
	"time"

	"amsg/push/courier"
	"amsg/scheduler"
	"amsg/store"
)

// schedulerConfig holds the scheduler's settings beyond --tick.
type schedulerConfig struct {
	Lease        time.Duration
	Heartbeat    time.Duration
	PushInterval time.Duration
	Concurrency  int
	Lookahead    time.Duration
	FireGrid     time.Duration
	// Retries of a failed occurrence, by kind of failure.
	DeliveryRetries   int
	GenerationRetries int
}

// register adds the scheduler's flags; each gets its AMSG_ twin like every
// other flag.
func (c *schedulerConfig) register(fs *flag.FlagSet) {
	fs.DurationVar(&c.Lease, "task-lease", scheduler.DefaultLeaseTTL,
		"how long a claimed task is held; a crashed process's tasks are delivered again once it ends")
	fs.DurationVar(&c.Heartbeat, "task-heartbeat", scheduler.DefaultHeartbeat,
		"how often a delivery under way renews its lease (shorter than --task-lease)")
	fs.DurationVar(&c.PushInterval, "push-interval", scheduler.DefaultPushInterval,
		"pause between the pushes of one burst")
	fs.IntVar(&c.Concurrency, "task-concurrency", scheduler.DefaultConcurrency, "tasks delivered at once")
	fs.DurationVar(&c.Lookahead, "task-lookahead", scheduler.DefaultLookahead,
		"how far ahead of their time tasks are claimed; each starts at its time, so a slow database write delays no delivery (0: none)")
	fs.DurationVar(&c.FireGrid, "task-fire-grid", scheduler.DefaultFireGrid,
		"tasks claimed ahead start at the next multiple of this after their time, so a steady trickle's start in groups and cost less CPU (0: each at its time)")
	fs.IntVar(&c.DeliveryRetries, "max-delivery-retries", scheduler.DefaultMaxRetries,
		"retries of an occurrence whose push failed (0: none); an LLM answer already recorded is resent, never asked for again")
	fs.IntVar(&c.GenerationRetries, "max-generation-retries", scheduler.DefaultMaxRetries,
		"retries of an occurrence whose LLM call failed (0: none); an LLM refusal (400, 401, 402, 403, 404, 405, 413, 422) is never retried")
}

// maxFireGrid bounds --task-fire-grid: it is a delay added to deliveries
// to save CPU, worth a few milliseconds, never a visible lateness.
const maxFireGrid = 100 * time.Millisecond

func (c schedulerConfig) validate() error {
	switch {
	case c.Heartbeat <= 0 || c.Lease <= c.Heartbeat:
		return fmt.Errorf("%w: --task-heartbeat must be positive and shorter than --task-lease", errUsage)
	case c.PushInterval < time.Millisecond:
		return fmt.Errorf("%w: --push-interval must be at least 1ms", errUsage)
	case c.Concurrency < 1:
		return fmt.Errorf("%w: --task-concurrency must be at least 1", errUsage)
	case c.Lookahead < 0 || c.Lookahead > c.Heartbeat:
		return fmt.Errorf("%w: --task-lookahead must be 0 or more and at most --task-heartbeat", errUsage)
	case c.FireGrid < 0 || c.FireGrid > maxFireGrid:
		return fmt.Errorf("%w: --task-fire-grid must be 0 or more and at most %s", errUsage, maxFireGrid)
	case c.DeliveryRetries < 0 || c.GenerationRetries < 0:
		return fmt.Errorf("%w: --max-delivery-retries and --max-generation-retries must be 0 or more", errUsage)
	}
	return nil
}

// newScheduler builds the scheduler, which delivers tasks through cr and
// reports each claim's lateness to onClaim.
func (s *server) newScheduler(cr *courier.Courier, onClaim func(time.Duration)) error {
	c := s.cfg.Scheduler
	sched, err := scheduler.New(scheduler.Config{
		Tick:         s.cfg.Tick,
		LeaseTTL:     c.Lease,
		Heartbeat:    c.Heartbeat,
		PushInterval: c.PushInterval,
		Concurrency:  c.Concurrency,
		// The scheduler reads 0 as its default and a negative bound as none.
		Lookahead:            cmp.Or(c.Lookahead, -1),
		FireGrid:             cmp.Or(c.FireGrid, -1),
		MaxDeliveryRetries:   cmp.Or(c.DeliveryRetries, -1),
		MaxGenerationRetries: cmp.Or(c.GenerationRetries, -1),
		Logger:               s.log,
		Now:                  s.now,
		OnClaim:              onClaim,
		PageURL:              s.cfg.Notifications.PublicURL,
		Retention: store.Retention{
			Transcripts:   s.cfg.Instant.TranscriptMaxAge,
			DeviceSilence: s.cfg.Notifications.DeviceMaxSilence,
			Instances:     deadInstanceAge,
			TokenProofs:   s.cfg.Limits.API.TokenProofMaxAge,
		},
	}, scheduler.Deps{Store: s.store, Courier: cr, LLM: s.llm, Transcripts: s.transcripts,
		Housekeeper: s.housekeeping})
	if err != nil {
		return &configError{err}
	}
	s.scheduler = sched
	// Several instances: their leader resumes a dead one's broadcasts. A
	// SQLite data directory has one process, whose start resumes them.
	shared := s.cfg.DatabaseURL != ""
	s.broadcasts = scheduler.NewBroadcasts(s.store, scheduler.BroadcastConfig{Shared: shared, Logger: s.log, Now: s.now})
	if shared {
		s.housekeeping.Follow(s.broadcasts.Lead)
	}
	return nil
}

// stopScheduler lets deliveries under way and the loops resumed after an
// approval finish for up to the shutdown timeout, then interrupts them;
// unfinished tasks get their leases released so the next start delivers
// them at once, and SSE backups not sent yet are kept in the outbox.
// Broadcasts stop at once; the next start (or the leader) sends the rest.
func (s *server) stopScheduler(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := s.courier.Stop(ctx); err != nil {
		s.log.Warn("SSE backups did not go out in time; the rest are kept in the outbox", "err", err)
	}
	var resumed sync.WaitGroup
	resumed.Go(func() {
		if err := s.interrupts.Stop(ctx); err != nil {
			s.log.Warn("loops resumed after an approval did not finish in time; they were interrupted", "err", err)
		}
	})
	if err := s.scheduler.Stop(ctx); err != nil {
		s.log.Warn("deliveries did not finish in time; their tasks will be delivered on the next start", "err", err)
	}
	resumed.Wait()
	s.broadcasts.Stop()
}
