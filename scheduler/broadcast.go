package scheduler

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"amsg/store"
)

// Broadcasts sends the operator's broadcasts in the background, beside the
// scheduler and stopped with it: each at its stored pace, recording its
// cursor after every user so a stop loses at most the user under way. What
// one user gets (the push, the user's guards) is the BroadcastSender's
// business, which instance resumes a dead one's broadcasts the
// housekeeping Leadership's (Lead); where a broadcast stands and when it
// goes on after a crash is decided here alone.
type Broadcasts struct {
	store  *store.Store
	cfg    BroadcastConfig
	log    *slog.Logger
	sender BroadcastSender // set by Start

	// runCtx ends when Stop begins; every broadcast runs under it.
	runCtx    context.Context
	cancelRun context.CancelFunc
	mu        sync.Mutex
	running   map[string]bool // the broadcasts this process is sending, so none runs twice at once
	wg        sync.WaitGroup  // the broadcasts under way
}

// BroadcastSender sends a broadcast's message to one user; api's operator
// send is one. It returns ErrNoDevices (wrapped or not) for a user without
// a device.
type BroadcastSender interface {
	SendBroadcast(ctx context.Context, b store.Broadcast, userID string) error
}

// ErrNoDevices: the user has no device to send to. Such a user counts as
// failed but does not spend the broadcast's pace.
var ErrNoDevices = errors.New("scheduler: the user has no device")

// BroadcastConfig shapes Broadcasts.
type BroadcastConfig struct {
	// Shared says several instances share the database: the leader
	// resumes the broadcasts of dead instances (Lead, told by the
	// housekeeping's Leadership every beat), those idle since Idle.
	// Otherwise this process is the database's only one, and Start resumes
	// every running broadcast at once: they are a dead process's.
	Shared bool
	Idle   time.Duration
	Logger *slog.Logger     // nil: slog.Default()
	Now    func() time.Time // nil: time.Now
}

// Defaults of BroadcastConfig.
const (
	// DefaultBroadcastRate is the pace of a broadcast stored without one,
	// users per second.
	DefaultBroadcastRate = 10
	// DefaultBroadcastIdle is how long a running broadcast may go without
	// advancing before the leader takes it for a dead instance's. A live one
	// advances after every user, at least once a second.
	DefaultBroadcastIdle = 5 * time.Minute
	// broadcastPage is how many users of "all" are read at a time.
	broadcastPage = 100
)

// NewBroadcasts applies the defaults; nothing runs until Start.
func NewBroadcasts(st *store.Store, cfg BroadcastConfig) *Broadcasts {
	cfg.Idle = cmp.Or(cfg.Idle, DefaultBroadcastIdle)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	b := &Broadcasts{store: st, cfg: cfg, log: cmp.Or(cfg.Logger, slog.Default()), running: map[string]bool{}}
	b.runCtx, b.cancelRun = context.WithCancel(context.Background())
	return b
}

// Start sends through sender from now on and, when this process is the
// database's only one, resumes every broadcast a previous process left
// running. Call it before the Leadership that tells Lead campaigns.
func (b *Broadcasts) Start(sender BroadcastSender) error {
	b.sender = sender
	if !b.cfg.Shared {
		return b.Resume(b.runCtx, b.cfg.Now())
	}
	return nil
}

// Lead is told each beat whether this instance leads the housekeeping; the
// leader resumes the running broadcasts idle since Idle, a dead instance's.
func (b *Broadcasts) Lead(_ context.Context, leads bool) {
	if !leads || !b.cfg.Shared || b.runCtx.Err() != nil {
		return
	}
	if err := b.Resume(b.runCtx, b.cfg.Now().Add(-b.cfg.Idle)); err != nil && b.runCtx.Err() == nil {
		b.log.Warn("scheduler: resuming the broadcasts of dead instances failed", "err", err)
	}
}

// Stop interrupts the broadcasts under way and waits for them. Each stays
// running in the store with the cursor of its last user sent, so the next
// start (or the leader) sends the rest.
func (b *Broadcasts) Stop() {
	b.cancelRun()
	b.Wait()
}

// Wait returns when no broadcast of this process is under way.
func (b *Broadcasts) Wait() { b.wg.Wait() }

// Resume continues the running broadcasts that have not advanced since
// idleSince.
func (b *Broadcasts) Resume(ctx context.Context, idleSince time.Time) error {
	list, err := b.store.Broadcasts(ctx, store.BroadcastRunning, store.MaxAdminPage)
	if err != nil {
		return err
	}
	for _, bc := range list {
		if bc.UpdatedAt.After(idleSince) {
			continue
		}
		b.log.InfoContext(ctx, "resuming a broadcast", "broadcastId", bc.ID, "cursorSet", bc.Cursor != "", "sent", bc.Sent)
		b.Send(bc)
	}
	return nil
}

// Send sends bc after its cursor on a goroutine of its own at its stored
// rate (a resumed broadcast keeps the pace it was started with); one this
// process is already sending, or any after Stop, is left alone.
func (b *Broadcasts) Send(bc store.Broadcast) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running[bc.ID] || b.runCtx.Err() != nil {
		return
	}
	b.running[bc.ID] = true
	b.wg.Go(func() {
		defer func() {
			b.mu.Lock()
			delete(b.running, bc.ID)
			b.mu.Unlock()
		}()
		cursor, err := b.run(b.runCtx, bc)
		if err != nil && b.runCtx.Err() == nil {
			b.log.Error("broadcast stopped", "broadcastId", bc.ID, "err", err)
			ctx, cancel := context.WithTimeout(context.Background(), bookkeepingTimeout)
			defer cancel()
			_ = b.store.AdvanceBroadcast(ctx, bc.ID, cursor, 0, 0, store.BroadcastStopped)
		}
	})
}

// run sends bc to every user after its cursor, recording the cursor after
// each, and returns the last one recorded. A user whose send ctx cut short
// is not recorded: the resumed broadcast sends it again with the same
// message id, which the service worker drops if the first arrived.
func (b *Broadcasts) run(ctx context.Context, bc store.Broadcast) (string, error) {
	rate := bc.RatePerSecond
	if rate <= 0 {
		rate = DefaultBroadcastRate
	}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	cursor := bc.Cursor
	for {
		next, err := b.page(ctx, bc, cursor)
		if err != nil {
			return cursor, err
		}
		if len(next) == 0 {
			return cursor, b.store.AdvanceBroadcast(ctx, bc.ID, cursor, 0, 0, store.BroadcastDone)
		}
		for _, userID := range next {
			sent, failed := 1, 0
			err := b.sender.SendBroadcast(ctx, bc, userID)
			if ctx.Err() != nil {
				return cursor, ctx.Err()
			}
			if err != nil {
				sent, failed = 0, 1
				b.log.InfoContext(ctx, "broadcast could not reach a user", "broadcastId", bc.ID, "err", err)
			}
			if err := b.store.AdvanceBroadcast(ctx, bc.ID, userID, sent, failed, store.BroadcastRunning); err != nil {
				return cursor, err
			}
			cursor = userID
			// The pace spares the push services; a user without devices
			// cost them nothing.
			if errors.Is(err, ErrNoDevices) {
				continue
			}
			select {
			case <-ctx.Done():
				return cursor, ctx.Err()
			case <-tick.C:
			}
		}
	}
}

// page is the next recipients after cursor: the following ids of the list,
// or the following page of every user.
func (b *Broadcasts) page(ctx context.Context, bc store.Broadcast, cursor string) ([]string, error) {
	if bc.UserIDs != nil {
		start := 0
		if cursor != "" {
			start = slices.Index(bc.UserIDs, cursor) + 1
		}
		return bc.UserIDs[start:min(start+broadcastPage, len(bc.UserIDs))], nil
	}
	users, err := b.store.Users(ctx, cursor, broadcastPage)
	ids := make([]string, len(users))
	for i, u := range users {
		ids[i] = u.UserID
	}
	return ids, err
}
