package scheduler

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"amsg/loop"
	"amsg/push"
	"amsg/push/courier"
	"amsg/store"
)

// Interrupts runs what follows a settled approval (issue 21) in the
// background, beside the scheduler and stopped with it: the outcome's quiet
// push that replaces the approval's notification on the user's devices,
// then the agent loop's next round once its round has every result. It
// also settles the approvals whose time ran out. api only records a
// decision and hands the interrupt over (Settled): the decision's answer
// does not wait for the model.
//
// A round once followed is marked so in the store (loop.Agent.MarkResumed).
// An approval settled while its instance stopped, or whose instance died
// before its round was followed, stays unmarked, and the sweep (Recover)
// of any instance resumes it: the transcript's fenced append lets one
// round run however many instances try.
type Interrupts struct {
	agent   *loop.Agent
	courier *courier.Courier
	cfg     InterruptsConfig
	log     *slog.Logger

	// runCtx ends when Stop gives up waiting: every resumed round runs
	// under it. watchCtx ends when Stop begins: the expiry sweep runs under
	// it.
	runCtx      context.Context
	cancelRun   context.CancelFunc
	watchCtx    context.Context
	cancelWatch context.CancelFunc
	mu          sync.Mutex
	stopping    bool
	following   map[roundKey]bool // the rounds this process is following
	rounds      sync.WaitGroup    // the rounds resumed
	watching    sync.WaitGroup    // the expiry sweep
}

// InterruptsConfig shapes Interrupts.
type InterruptsConfig struct {
	// Interval is how often expired approvals are looked for; 0 is
	// DefaultTick.
	Interval time.Duration
	// MaxPushes bounds a resumed round's pushes, as a request's round is
	// bounded (loop.CapPushes); 0 is loop.DefaultMaxPushesPerRound.
	MaxPushes int
	// RecoverAfter is how long after its settlement an approval whose
	// round was not followed is resumed by the sweep; 0 is
	// DefaultRecoverAfter.
	RecoverAfter time.Duration
	Logger       *slog.Logger // nil: slog.Default()
}

// DefaultRecoverAfter leaves the instance that settled an approval time to
// follow it, which takes it milliseconds, before another takes it up.
const DefaultRecoverAfter = time.Minute

// Bounds of Interrupts.
const (
	// resumeTimeout bounds a round resumed without a request.
	resumeTimeout = 10 * time.Minute
	// expireBatch bounds the interrupts one sweep settles.
	expireBatch = 100
)

// NewInterrupts resumes agent's loops, sending through cr; nothing runs
// until Start.
func NewInterrupts(agent *loop.Agent, cr *courier.Courier, cfg InterruptsConfig) *Interrupts {
	cfg.Interval = cmp.Or(cfg.Interval, DefaultTick)
	cfg.MaxPushes = cmp.Or(cfg.MaxPushes, loop.DefaultMaxPushesPerRound)
	cfg.RecoverAfter = cmp.Or(cfg.RecoverAfter, DefaultRecoverAfter)
	in := &Interrupts{agent: agent, courier: cr, cfg: cfg, log: cmp.Or(cfg.Logger, slog.Default()),
		following: map[roundKey]bool{}}
	in.runCtx, in.cancelRun = context.WithCancel(context.Background())
	in.watchCtx, in.cancelWatch = context.WithCancel(context.Background())
	return in
}

// Start looks for expired approvals, and for settled ones whose round was
// not followed, every Interval until Stop. The interrupts live in the
// database, so an expiry that fell while no instance ran is settled by the
// first sweep after a start; every instance looks, and each expiry is
// settled by one (store fence).
func (in *Interrupts) Start() {
	in.watching.Go(func() {
		t := time.NewTicker(in.cfg.Interval)
		defer t.Stop()
		for {
			if _, err := in.Expire(in.watchCtx); err != nil && in.watchCtx.Err() == nil {
				in.log.WarnContext(in.watchCtx, "could not settle expired approvals", "err", err)
			}
			if _, err := in.Recover(in.watchCtx); err != nil && in.watchCtx.Err() == nil {
				in.log.WarnContext(in.watchCtx, "could not resume approvals whose round was not followed", "err", err)
			}
			select {
			case <-in.watchCtx.Done():
				return
			case <-t.C:
			}
		}
	})
}

// Stop ends the expiry sweep and waits for the resumed rounds until ctx
// ends; then it interrupts them (each records its failed round in the
// transcript, as a round whose LLM call failed) and returns ctx's error once
// they have returned. An interrupt settled after Stop began is resumed by
// the sweep of an instance that runs (Recover).
func (in *Interrupts) Stop(ctx context.Context) error {
	in.mu.Lock()
	in.stopping = true
	in.mu.Unlock()
	in.cancelWatch()
	in.watching.Wait()
	return push.Drain(ctx, &in.rounds, in.cancelRun)
}

// Wait returns when no resumed round is under way.
func (in *Interrupts) Wait() { in.rounds.Wait() }

// Settled follows an interrupt that a decision (by the device decidedBy, 0
// for none) or the expiry settled: the outcome's push replaces the
// approval's notification on the user's devices but the one that decided,
// and the loop resumes, on a goroutine of its own bounded by resumeTimeout.
// ctx gives its values (the request's trace), not its end.
func (in *Interrupts) Settled(ctx context.Context, it *store.Interrupt, decidedBy int64) {
	in.follow(ctx, it, func(ctx context.Context) { in.replaceApproval(ctx, it, decidedBy) })
}

// roundKey names one round of a user's session.
type roundKey struct {
	userID, sessionID string
	iteration         int
}

func keyOf(it *store.Interrupt) roundKey { return roundKey{it.UserID, it.SessionID, it.Iteration} }

// follow runs first (if any), then resumes the round of it, on a goroutine of
// its own, unless this process follows that round already or stops. It
// reports whether it started.
func (in *Interrupts) follow(ctx context.Context, it *store.Interrupt, first func(context.Context)) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.stopping {
		in.log.WarnContext(ctx, "an approval was settled while amsg stops: a running instance resumes its loop", "interrupt", it.ID)
		return false
	}
	key := keyOf(it)
	if in.following[key] {
		return false
	}
	in.following[key] = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resumeTimeout)
	stop := context.AfterFunc(in.runCtx, cancel)
	in.rounds.Go(func() {
		defer func() {
			stop()
			cancel()
			in.mu.Lock()
			delete(in.following, key)
			in.mu.Unlock()
		}()
		if first != nil {
			first(ctx)
		}
		in.resume(ctx, it)
	})
	return true
}

// Recover resumes the loops of the approvals settled at least RecoverAfter
// ago whose round was never followed, as Settled would have, but for the
// outcome's push. It returns how many rounds it started.
func (in *Interrupts) Recover(ctx context.Context) (int, error) {
	list, err := in.agent.UnresumedInterrupts(ctx, in.agent.Now().Add(-in.cfg.RecoverAfter), expireBatch)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range list {
		if in.follow(ctx, &list[i], nil) {
			n++
		}
	}
	return n, nil
}

func (in *Interrupts) replaceApproval(ctx context.Context, it *store.Interrupt, decidedBy int64) {
	p, err := in.agent.OutcomePush(it)
	if err == nil {
		var round *courier.Round
		if round, err = in.courier.Open(ctx, courier.Recipients{UserID: it.UserID, Except: decidedBy}, push.SourceInstant); err == nil {
			_, err = round.Push(ctx, p)
		}
	}
	if err != nil && !errors.Is(err, courier.ErrNoRecipients) {
		in.log.WarnContext(ctx, "could not replace an approval's notification", "interrupt", it.ID, "err", err)
	}
}

// resume runs the loop's next round, its pushes going to the user's devices
// as a JSON-transport round's do, and marks the round followed unless Stop
// cut it short or it may still be followed elsewhere (followed).
func (in *Interrupts) resume(ctx context.Context, it *store.Interrupt) {
	run, err := in.agent.ResumeInterrupt(ctx, it)
	if err == nil && run != nil {
		err = in.execute(ctx, it, run)
	}
	if !in.followed(it, err) {
		return
	}
	if err := in.agent.MarkResumed(context.WithoutCancel(ctx), it); err != nil {
		in.log.WarnContext(ctx, "could not mark an approval's round followed: the sweep resumes it again", "interrupt", it.ID, "err", err)
	}
}

// followed reports whether what resume did with the round of it, ending in err,
// leaves nothing for another try: the round ran (not cut by Stop), waits
// for another approval or for the browser, or was followed by another
// request, which a conflict proves only once a claim can no longer hold.
func (in *Interrupts) followed(it *store.Interrupt, err error) bool {
	var ce *loop.ContinueError
	switch {
	case in.runCtx.Err() != nil:
		return false
	case errors.As(err, &ce) && ce.Conflict:
		return !it.DecidedAt.After(in.agent.Now().Add(-in.agent.ClaimTimeout()))
	case errors.As(err, &ce):
		return true
	case err != nil:
		in.log.Error("could not resume a loop after an approval", "interrupt", it.ID, "err", err)
		return false
	}
	return true
}

// execute runs a resumed round; its failure, recorded in the transcript
// and pushed, is the round's answer.
func (in *Interrupts) execute(ctx context.Context, it *store.Interrupt, run *loop.Run) error {
	round, err := in.courier.Open(ctx, courier.Recipients{UserID: it.UserID}, push.SourceInstant)
	if err != nil {
		return err
	}
	_, err = run.Execute(ctx, loop.CapPushes(in.cfg.MaxPushes, func(p push.Push) error { return round.Reach(ctx, p, false) }))
	var f *loop.Failure
	if errors.As(err, &f) && f.Push != nil {
		if derr := round.Reach(ctx, f.Push, false); derr != nil {
			in.log.WarnContext(ctx, "could not deliver an error push", "sessionId", it.SessionID, "code", f.Code, "err", derr)
		}
	}
	return nil
}

// Expire settles the approvals whose time ran out, as of the agent's clock:
// each notification is replaced by "No longer waiting" and each loop
// resumes with {"approved": false, "expired": true}. It returns how many it
// settled. Instances on one database share the work: each interrupt is
// settled by exactly one.
func (in *Interrupts) Expire(ctx context.Context) (int, error) {
	// A read first: the sweep itself is a write, which on SQLite would take
	// the one writer every tick for nothing.
	next, err := in.agent.NextInterruptExpiry(ctx)
	if err != nil || next.IsZero() || next.After(in.agent.Now()) {
		return 0, err
	}
	n := 0
	for {
		list, err := in.agent.ExpireInterrupts(ctx, expireBatch)
		if err != nil {
			return n, err
		}
		for i := range list {
			in.Settled(ctx, &list[i], 0)
		}
		n += len(list)
		if len(list) < expireBatch {
			return n, nil
		}
	}
}
