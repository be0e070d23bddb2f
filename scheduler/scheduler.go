// Package scheduler is amsg's durable scheduler. The database is the source
// of truth: a task's next occurrence is its next_send_at column, and the
// scheduler claims due tasks with a lease (an atomic UPDATE … RETURNING),
// renews the lease while it delivers, and finishes each occurrence with one
// fenced write: delete a one-off task, advance a recurring one, back off, or
// fail. A crash loses nothing: leases expire and the occurrence is delivered
// again with the same push ids, which the service worker deduplicates.
//
// The background loop claims as many due tasks as there are free delivery
// slots (Config.Concurrency, default 64), claims again as soon as a batch of
// slots frees while work remains, so a backlog drains at the speed of
// delivery rather than one batch per tick, and otherwise sleeps until the
// next task is due or Config.Tick (default 1 s) has passed, whichever is
// sooner. It claims tasks a little before their time (Config.Lookahead)
// and starts each at its time, so a claim that waits for the database
// delays no delivery and one claim takes the tasks of a span. Every push
// goes through the courier (push/courier), which bounds the sends per user
// and per push service; LLM calls have a pool of their own
// (Config.LLMConcurrency).
package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"amsg/llm"
	"amsg/loop"
	"amsg/push"
	"amsg/push/courier"
	"amsg/push/tracing"
	"amsg/store"
)

// Defaults of Config, the standard's constants where it has them.
const (
	DefaultTick              = time.Second
	DefaultLeaseTTL          = 90 * time.Second
	DefaultHeartbeat         = 30 * time.Second
	DefaultConcurrency       = 64
	DefaultLLMConcurrency    = 8
	DefaultPerUserTasks      = 8
	DefaultFetchLimit        = 50
	DefaultTrickleWait       = 4 * time.Millisecond
	DefaultLookahead         = 250 * time.Millisecond
	DefaultFireGrid          = 10 * time.Millisecond
	DefaultPushInterval      = 1500 * time.Millisecond
	DefaultStaleAfter        = 60 * time.Minute
	DefaultRetryBackoff      = 2 * time.Minute
	DefaultMaxRetries        = 3 // of delivery and of generation each
	DefaultFinishedRetention = 7 * 24 * time.Hour
	DefaultCleanupInterval   = time.Minute
	// Instant deliveries inside the schedule request: 3 attempts, waiting
	// 1 s then 2 s.
	DefaultInstantAttempts = 3
	DefaultInstantBackoff  = time.Second
)

// Config configures a Scheduler. Zero values take the defaults.
type Config struct {
	// Tick is how often due tasks are looked for (AMSG_TICK).
	Tick time.Duration
	// LeaseTTL is how long a claim holds a task; Heartbeat is how often a
	// delivery under way renews it to now+LeaseTTL. A crashed process's
	// tasks are delivered again once their leases end.
	LeaseTTL  time.Duration
	Heartbeat time.Duration
	// Concurrency bounds the tasks delivered at once. The courier bounds
	// the sends per user and per push service below it, so one user or one
	// slow push service holds only a few of these.
	Concurrency int
	// LLMConcurrency bounds the LLM calls of prompted and auto tasks under
	// way at once: slow models wait among themselves.
	LLMConcurrency int
	// PerUserTasks bounds the tasks of one user the background loop
	// delivers at once, so one user's backlog (or push service that hangs)
	// leaves the other slots to other users.
	PerUserTasks int
	// FetchLimit bounds the tasks one Tick call claims.
	FetchLimit int
	// TrickleWait is how long after the next task's time the loop claims
	// while tasks keep falling due (its last claim found some): one claim,
	// and one group commit of their outcomes, then takes every task of that
	// span instead of one each, for at most this much more lateness. A
	// task after a quiet spell is claimed at its time. Negative: none.
	// Only without Lookahead, whose claims group a trickle already.
	TrickleWait time.Duration
	// Lookahead is how far ahead of their time the background loop claims
	// tasks: each waits in memory, under its lease and tracked for a
	// cancel, and starts at its time (Sleep), so a claim held up by the
	// database (SQLite's checkpoint, a busy writer) for less than half a
	// Lookahead delays tasks not due yet rather than deliveries. The loop
	// claims again when the next task is half a Lookahead away, so each
	// claim takes half a Lookahead of a trickle's tasks. At most
	// aheadPerSlot × Concurrency tasks wait so, whose users' shares
	// (PerUserTasks) they count in, for at most Heartbeat. Negative: none,
	// tasks are claimed at their time. Tick claims only due tasks.
	Lookahead time.Duration
	// FireGrid groups the starts of tasks claimed ahead: each starts at
	// the first multiple of FireGrid (of wall-clock time) at or after its
	// time, never before it, so a trickle's tasks due within one FireGrid
	// start together: one timer wakes them, their requests share a flush
	// and their outcomes a group commit, at most FireGrid later (issue
	// 24). The default, 10 ms, is the CPU's: a push of a trickle woken
	// alone also finds its caches cold, and sealing one costs half as
	// much again as in a burst; 8 ms cost a 1 000/s trickle about 15 %
	// less CPU than 4 ms, 10 ms about 7 % less again, for a
	// due-to-delivered p99 of about 11.5 ms (4 ms: 5; 12 ms: 13.7, too
	// near the 15 ms the issue allows). Negative: none, each starts at its
	// time. It is cut to what Heartbeat leaves of a Lookahead.
	FireGrid time.Duration
	// PushInterval is the pause between the pushes of one burst.
	PushInterval time.Duration
	// StaleAfter is how late an occurrence may be delivered; later ones are
	// skipped (recurring) or failed (one-off).
	StaleAfter time.Duration
	// RetryBackoff is the unit of the retry wait, (retry_count+1) ×
	// RetryBackoff. An occurrence whose push failed is retried while it has
	// had fewer than MaxDeliveryRetries retries, one whose LLM call failed
	// fewer than MaxGenerationRetries (an answer already recorded is
	// resent, never asked for again). 0 takes DefaultMaxRetries; a negative
	// value means no retry.
	RetryBackoff         time.Duration
	MaxDeliveryRetries   int
	MaxGenerationRetries int
	// Retention is how long each kind of row is kept (its FinishedTasks
	// defaults to DefaultFinishedRetention); CleanupInterval is how often
	// the housekeeping prunes them, which POST /send-notifications also
	// does, as the standard's tick does.
	Retention       store.Retention
	CleanupInterval time.Duration
	// InstantAttempts and InstantBackoff shape the in-request delivery of
	// instant tasks: attempt n+1 waits n × InstantBackoff.
	InstantAttempts int
	InstantBackoff  time.Duration

	Logger *slog.Logger     // nil: slog.Default()
	Now    func() time.Time // nil: time.Now
	// PageURL is the companion page's origin; with it content pushes are
	// Declarative Web Push messages (builders.Builder.PageURL).
	PageURL string
	// Sleep waits between pushes, between instant attempts and until a
	// task claimed ahead is due; nil is push.Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnClaim, when set, is told how late each claimed occurrence is (the
	// claim time minus its nominal time), for the lateness metric.
	OnClaim func(lateness time.Duration)
}

// Completer calls an LLM; *llm.Client is one.
type Completer interface {
	Complete(ctx context.Context, req llm.Request) (*llm.Response, error)
}

// Deps are the components the scheduler uses.
type Deps struct {
	Store *store.Store
	// Courier delivers every occurrence's pushes.
	Courier *courier.Courier
	LLM     Completer
	// Transcripts, when set, records every LLM round an occurrence runs.
	Transcripts *loop.Transcripts
	// Housekeeper, when set, says whether this process prunes finished
	// tasks and the outbox: one of several instances on one database does.
	Housekeeper Housekeeper
}

// Housekeeper elects the one process that does the housekeeping;
// store.Leader is one.
type Housekeeper interface {
	Check(ctx context.Context) (bool, error)
}

// Scheduler delivers scheduled tasks. Start it once; Stop ends it.
type Scheduler struct {
	cfg  Config
	deps Deps
	log  *slog.Logger
	now  func() time.Time

	slots chan struct{} // one token per delivery under way
	// userTasks counts each user's tasks in delivery (the background
	// loop's), bounded by PerUserTasks.
	usersMu   sync.Mutex
	userTasks map[string]int
	llmSlots  chan struct{} // one token per LLM call under way
	// writing has one token per delivery whose pushes are out and whose
	// outcome is being written (slotHold.handOff), Concurrency at most.
	writing chan struct{}
	freed   chan struct{} // signalled when a delivery gives back its slot or a task claimed ahead starts
	// ahead counts the tasks claimed ahead that hold no slot yet
	// (slotHold.await), maxAhead at most.
	ahead atomic.Int32
	wake  chan struct{} // signalled by Wake

	// runCtx is the context of deliveries; Stop cancels it when its grace
	// period is over. stopped ends when Stop begins: the loop and Tick stop
	// claiming, and the tasks claimed ahead stop waiting and give their
	// leases back.
	runCtx    context.Context
	cancelRun context.CancelFunc
	stopped   context.Context
	stop      context.CancelFunc
	loopDone  chan struct{}
	started   bool
	wg        sync.WaitGroup // deliveries
	mu        sync.Mutex
	closing   bool // set by Stop: launch refuses

	cleanupMu   sync.Mutex
	lastCleanup time.Time

	workers    workers    // the goroutines deliveries run on (workers.go)
	deliveries deliveries // the occurrences under way, for Cancel
	// segmentCache keeps recurring fixed tasks' split texts (segments.go).
	segmentCache segmentCache
}

// New checks deps and applies the defaults.
func New(cfg Config, deps Deps) (*Scheduler, error) {
	if deps.Store == nil || deps.Courier == nil || deps.LLM == nil {
		return nil, errors.New("scheduler: Store, Courier and LLM are required")
	}
	cfg.Tick = cmp.Or(cfg.Tick, DefaultTick)
	cfg.LeaseTTL = cmp.Or(cfg.LeaseTTL, DefaultLeaseTTL)
	cfg.Heartbeat = cmp.Or(cfg.Heartbeat, DefaultHeartbeat)
	cfg.Concurrency = cmp.Or(cfg.Concurrency, DefaultConcurrency)
	cfg.LLMConcurrency = cmp.Or(cfg.LLMConcurrency, DefaultLLMConcurrency)
	cfg.PerUserTasks = cmp.Or(cfg.PerUserTasks, DefaultPerUserTasks)
	cfg.FetchLimit = cmp.Or(cfg.FetchLimit, DefaultFetchLimit)
	cfg.TrickleWait = max(cmp.Or(cfg.TrickleWait, DefaultTrickleWait), 0)
	cfg.Lookahead = max(cmp.Or(cfg.Lookahead, DefaultLookahead), 0)
	cfg.FireGrid = max(cmp.Or(cfg.FireGrid, DefaultFireGrid), 0)
	cfg.PushInterval = cmp.Or(cfg.PushInterval, DefaultPushInterval)
	cfg.StaleAfter = cmp.Or(cfg.StaleAfter, DefaultStaleAfter)
	cfg.RetryBackoff = cmp.Or(cfg.RetryBackoff, DefaultRetryBackoff)
	cfg.MaxDeliveryRetries = retries(cfg.MaxDeliveryRetries)
	cfg.MaxGenerationRetries = retries(cfg.MaxGenerationRetries)
	cfg.Retention.FinishedTasks = cmp.Or(cfg.Retention.FinishedTasks, DefaultFinishedRetention)
	cfg.CleanupInterval = cmp.Or(cfg.CleanupInterval, DefaultCleanupInterval)
	cfg.InstantAttempts = cmp.Or(cfg.InstantAttempts, DefaultInstantAttempts)
	cfg.InstantBackoff = cmp.Or(cfg.InstantBackoff, DefaultInstantBackoff)
	if cfg.Heartbeat >= cfg.LeaseTTL {
		return nil, fmt.Errorf("scheduler: heartbeat %s must be shorter than the lease %s", cfg.Heartbeat, cfg.LeaseTTL)
	}
	// A task claimed ahead waits no longer than a heartbeat: Unclaim knows
	// its claim by the lease it took.
	cfg.Lookahead = min(cfg.Lookahead, cfg.Heartbeat)
	// ... and FireGrid adds to that wait no more than the heartbeat leaves.
	cfg.FireGrid = min(cfg.FireGrid, cfg.Heartbeat-cfg.Lookahead)
	s := &Scheduler{
		cfg:        cfg,
		deps:       deps,
		log:        cmp.Or(cfg.Logger, slog.Default()),
		now:        cfg.Now,
		slots:      make(chan struct{}, cfg.Concurrency),
		llmSlots:   make(chan struct{}, cfg.LLMConcurrency),
		writing:    make(chan struct{}, cfg.Concurrency),
		userTasks:  map[string]int{},
		freed:      make(chan struct{}, 1),
		wake:       make(chan struct{}, 1),
		loopDone:   make(chan struct{}),
		deliveries: deliveries{running: map[int64]context.CancelCauseFunc{}, early: map[int64]time.Time{}, waiting: map[int64]aheadClaim{}},
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.cfg.Sleep == nil {
		s.cfg.Sleep = push.Sleep
	}
	s.runCtx, s.cancelRun = context.WithCancel(context.Background())
	s.stopped, s.stop = context.WithCancel(context.Background())
	s.workers = workers{jobs: make(chan job), quit: s.stopped.Done()}
	return s, nil
}

func (s *Scheduler) sleep(ctx context.Context, d time.Duration) error { return s.cfg.Sleep(ctx, d) }

// retries reads a retry bound of Config: 0 is the default, negative none.
func retries(n int) int {
	if n < 0 {
		return 0
	}
	return cmp.Or(n, DefaultMaxRetries)
}

// Start runs the background loop: it claims due tasks at once (tasks that
// fell due while the server was down fire now, unless stale), then whenever
// the next task is due, a slot frees, Wake is called or Tick has passed.
func (s *Scheduler) Start() {
	s.started = true
	go s.loop()
}

// Stop stops claiming, lets deliveries under way finish until ctx ends,
// then interrupts the rest. Tasks it claimed but did not finish get their
// leases released, so the next start delivers them at once.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.stop()
	s.deliveries.stopWaiting()
	if s.started {
		<-s.loopDone
	}
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	defer s.cancelRun()
	return push.Drain(ctx, &s.wg, s.cancelRun)
}

func (s *Scheduler) loop() {
	defer close(s.loopDone)
	timer := time.NewTimer(0)
	defer timer.Stop()
	backlog := false // the last claim was full: more may be due
	for {
		s.cleanup(s.runCtx, false)
		var freed <-chan struct{}
		wait := s.cfg.Tick
		if room := s.claimRoom(); room == 0 || (backlog && room < s.claimBatch()) {
			// While a backlog drains, claim a batch at a time rather than
			// one task per freed slot: one write claims tens of tasks.
			freed = s.freed
		} else if n, err := s.claimAndStart(room); err != nil {
			s.log.Error("scheduler: claiming due tasks failed", "err", err)
		} else if backlog = n == room; backlog {
			freed = s.freed
		} else {
			wait = s.untilNextDue(wait, n > 0)
		}
		timer.Reset(wait)
		select {
		case <-s.stopped.Done():
			return
		case <-timer.C:
		case <-freed:
		case <-s.wake:
		}
	}
}

// claimBatch is how many slots must be free before the loop claims again
// while a backlog drains: a quarter of them, at most 32.
func (s *Scheduler) claimBatch() int { return min(max(cap(s.slots)/4, 1), 32) }

// claimRoom is how many tasks the loop may claim: one per free slot, and
// no more than may still wait claimed ahead (maxAhead in all), so an
// instance holds at most a bounded number of tasks not due yet.
func (s *Scheduler) claimRoom() int {
	return min(cap(s.slots)-len(s.slots), s.maxAhead()-int(s.ahead.Load()))
}

// aheadPerSlot is how many tasks may wait claimed ahead per delivery slot.
// With one per slot (Concurrency), a trickle of 1 000 tasks a second was
// claimed only 48–64 ms ahead, whatever the Lookahead: every claim the
// writer held up longer (a checkpoint, a group commit on a busy CPU) made
// tasks late, which set the trickle's p99 (issue 24). Four per slot let a
// Lookahead of 250 ms hold at up to 1 000 tasks a second at the default
// Concurrency.
const aheadPerSlot = 4

// maxAhead bounds the tasks waiting claimed ahead.
func (s *Scheduler) maxAhead() int { return aheadPerSlot * cap(s.slots) }

// untilNextDue shortens wait to when the next pending task becomes
// claimable, so a task fires within milliseconds of its time rather than
// at the next tick: half a Lookahead before it, or without a Lookahead,
// at its time, TrickleWait later while tasks keep falling due. A task
// closer than half a Lookahead, which the claim just made passed over (a
// lease ending then), is waited for until its time, not spun on.
func (s *Scheduler) untilNextDue(wait time.Duration, trickle bool) time.Duration {
	next, ok, err := s.deps.Store.NextClaimableAt(s.runCtx)
	if err != nil {
		s.log.Error("scheduler: looking up the next due task failed", "err", err)
		return wait
	}
	if !ok {
		return wait
	}
	until := next.Sub(s.now())
	switch {
	case s.cfg.Lookahead > 0:
		if until > s.cfg.Lookahead/2 {
			until -= s.cfg.Lookahead / 2
		}
	case trickle:
		until += s.cfg.TrickleWait
	}
	return max(min(wait, until), 0)
}

// Wake makes the background loop look for due tasks now.
func (s *Scheduler) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// WakeFor wakes the loop for a task created or moved to fall due at due,
// as the API does after it, unless the loop would find it in time anyway:
// it looks again at most a Tick from now, and then claims what falls due
// within a Lookahead. A wake-up for nothing costs a claim (a write).
func (s *Scheduler) WakeFor(due time.Time) {
	if due.Sub(s.now()) <= s.cfg.Tick+s.cfg.Lookahead {
		s.Wake()
	}
}

// claimAndStart claims up to n tasks due by Lookahead from now, starts
// delivering those due and sets the others waiting for their time, logging
// each result.
func (s *Scheduler) claimAndStart(n int) (int, error) {
	now, began := s.now(), claimBegins()
	tasks, err := s.deps.Store.ClaimTasksDueBy(s.runCtx, now, now.Add(s.cfg.Lookahead), s.cfg.LeaseTTL, n, s.busyUsers())
	if err != nil {
		return 0, err
	}
	c := claimEnded(began, len(tasks))
	s.prefetchDevices(tasks)
	taken := tasks[:0:0]
	var surplus []store.Lease
	for _, t := range tasks {
		if !s.takeUser(t.UserID) {
			// The claim gave this user more than its share: the rest wait,
			// claimable, while the user's tasks under way finish.
			surplus = append(surplus, t.Lease())
			continue
		}
		h := &slotHold{s: s, userID: t.UserID, due: t.DueAt()}
		if h.due.After(now) {
			s.ahead.Add(1) // n left room for it (claimRoom)
		} else {
			taken = append(taken, t)
			h.due = time.Time{}
			s.slots <- struct{}{} // n slots were free; waits only while a concurrent Tick holds some
		}
		if !s.launch(func() {
			growStack()
			defer h.done()
			s.logResult(s.process(t, h, c))
		}) {
			h.done()
			s.releaseLease(t.Lease())
		}
	}
	s.releaseSurplus(surplus)
	s.observeClaims(taken, now)
	return len(tasks), nil
}

// prefetchDevices reads the devices of a claim's users in one read before
// their tasks start, where each task's first round read its user's alone
// (Courier.Prefetch).
func (s *Scheduler) prefetchDevices(tasks []store.Task) {
	if len(tasks) == 0 {
		return
	}
	users := make([]string, len(tasks))
	for i, t := range tasks {
		users[i] = t.UserID
	}
	s.deps.Courier.Prefetch(s.runCtx, users)
}

// releaseSurplus gives back the leases a claim took beyond their users'
// share, each on a goroutine of its own so the store commits them together
// and the loop claims again for the other users at once, instead of after
// one write per lease.
func (s *Scheduler) releaseSurplus(leases []store.Lease) {
	if len(leases) == 0 {
		return
	}
	for _, l := range leases {
		if !s.launch(func() { s.releaseLease(l) }) {
			s.releaseLease(l)
		}
	}
	s.Wake()
}

// takeUser counts one more task of userID in delivery, unless the user has
// PerUserTasks already.
func (s *Scheduler) takeUser(userID string) bool {
	s.usersMu.Lock()
	defer s.usersMu.Unlock()
	if s.userTasks[userID] >= s.cfg.PerUserTasks {
		return false
	}
	s.userTasks[userID]++
	return true
}

func (s *Scheduler) dropUser(userID string) {
	s.usersMu.Lock()
	defer s.usersMu.Unlock()
	if s.userTasks[userID]--; s.userTasks[userID] <= 0 {
		delete(s.userTasks, userID)
	}
}

// busyUsers are the users with PerUserTasks in delivery, whom the next
// claim passes over.
func (s *Scheduler) busyUsers() []string {
	s.usersMu.Lock()
	defer s.usersMu.Unlock()
	var busy []string
	for id, n := range s.userTasks {
		if n >= s.cfg.PerUserTasks && len(busy) < store.MaxClaimSkipUsers {
			busy = append(busy, id)
		}
	}
	return busy
}

// observeClaims reports each claimed occurrence's lateness to OnClaim.
func (s *Scheduler) observeClaims(tasks []store.Task, claimedAt time.Time) {
	for _, t := range tasks {
		s.observeClaim(t, claimedAt)
	}
}

// observeClaim reports one claimed occurrence's lateness to OnClaim.
func (s *Scheduler) observeClaim(t store.Task, claimedAt time.Time) {
	if s.cfg.OnClaim != nil {
		s.cfg.OnClaim(claimedAt.Sub(t.NextSendAt))
	}
}

// launch runs fn as a delivery Stop waits for, unless Stop has begun.
func (s *Scheduler) launch(fn func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.wg.Add(1)
	s.workers.run(fn, s.wg.Done)
	return true
}

func (s *Scheduler) release() {
	<-s.slots
	select {
	case s.freed <- struct{}{}:
	default:
	}
}

// slotHold is what one delivery holds of the scheduler's bounds: a slot,
// and its user's share when the background loop started it. Once its
// pushes are out, handOff trades them for a token of writing, so the next
// task is claimed and sent while this one's outcome waits for its commit
// (which the store groups with the others'): claiming, sending and
// committing overlap instead of taking turns in each slot. A task claimed
// ahead holds its user's share and no slot until await.
type slotHold struct {
	s       *Scheduler
	userID  string    // "" for Tick's deliveries, which count no user
	due     time.Time // set while the task, claimed ahead, holds no slot
	writing bool
	awaited bool // Tick's: its caller waits for the outcomes written
}

// await waits, for a task claimed ahead, until it is due and a slot is
// free, opening its push services' connections meanwhile (Courier.Warm),
// takes the slot and reports t's lateness to OnClaim then. It gives
// up when ctx, the delivery's, ends (a cancel, Unclaim, a lost lease, or
// Stop, which ends the waits with errStopping: deliveries.stopWaiting), and
// returns why.
func (h *slotHold) await(ctx context.Context, t store.Task) error {
	if h.due.IsZero() {
		return nil
	}
	s := h.s
	if !s.deliveries.wait(t.Lease()) {
		return errStopping
	}
	// Warmed only once waiting, so that an edit's Unclaim, a cancel and
	// Stop end a dial that hangs as they end the wait.
	s.deps.Courier.Warm(ctx, t.UserID)
	if err := s.sleep(ctx, s.startAt(h.due).Sub(s.now())); err != nil {
		return cmp.Or(context.Cause(ctx), err)
	}
	if !s.deliveries.begin(t.ID) {
		return ErrUnclaimed
	}
	if ctx.Err() != nil {
		// Stopped (or cancelled) between the wait and begin: a slot free
		// too would otherwise be taken at random.
		return context.Cause(ctx)
	}
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	h.due = time.Time{}
	s.leaveAhead()
	s.observeClaim(t, s.now())
	return nil
}

// startAt is when a task claimed ahead due at due starts: due rounded up
// to FireGrid.
func (s *Scheduler) startAt(due time.Time) time.Time {
	g := s.cfg.FireGrid
	if g <= 0 {
		return due
	}
	if at := due.Truncate(g); at.Before(due) {
		return at.Add(g)
	}
	return due
}

// errStopping ends the wait of a task claimed ahead when Stop begins.
var errStopping = errors.New("scheduler: stopping")

// leaveAhead counts a task claimed ahead out and lets the loop claim in
// its place.
func (s *Scheduler) leaveAhead() {
	s.ahead.Add(-1)
	select {
	case s.freed <- struct{}{}:
	default:
	}
}

// handOff gives back the slot for a token of writing, waiting for one
// while Concurrency outcomes are being written.
func (h *slotHold) handOff() {
	if h.writing {
		return
	}
	h.s.writing <- struct{}{}
	h.writing = true
	h.freeSlot()
}

// done gives back what h still holds.
func (h *slotHold) done() {
	switch {
	case h.writing:
		<-h.s.writing
	case !h.due.IsZero():
		h.due = time.Time{}
		if h.userID != "" {
			h.s.dropUser(h.userID)
		}
		h.s.leaveAhead()
	default:
		h.freeSlot()
	}
}

func (h *slotHold) freeSlot() {
	if h.userID != "" {
		h.s.dropUser(h.userID)
	}
	h.s.release()
}

// Tick runs one tick now, as POST /send-notifications does: it claims up to
// FetchLimit due tasks, delivers them within the concurrency bound, prunes
// old rows and returns the summary of the standard's tick.
func (s *Scheduler) Tick(ctx context.Context) (Summary, error) {
	start, began := s.now(), claimBegins()
	tasks, err := s.deps.Store.ClaimDueTasks(ctx, start, s.cfg.LeaseTTL, s.cfg.FetchLimit)
	if err != nil {
		return Summary{}, err
	}
	c := claimEnded(began, len(tasks))
	s.observeClaims(tasks, start)
	results := make([]result, len(tasks))
	var wg sync.WaitGroup
	// Slots are taken in claim order, so tasks start in next_send_at order;
	// the ones still waiting when the scheduler stops are released.
	for i, t := range tasks {
		acquired := false
		select {
		case s.slots <- struct{}{}:
			acquired = true
		case <-s.stopped.Done():
		case <-ctx.Done():
		}
		wg.Add(1)
		if !acquired || !s.launch(func() {
			defer wg.Done()
			h := &slotHold{s: s, awaited: true}
			defer h.done()
			results[i] = s.process(t, h, c)
		}) {
			if acquired {
				s.release()
			}
			results[i] = s.releaseLease(t.Lease())
			wg.Done()
		}
	}
	wg.Wait()
	s.cleanup(ctx, true)
	return summarize(start, s.now(), results), nil
}

// releaseLease gives up a claimed task this process will not deliver (it
// is stopping), so the next start delivers it without waiting for the lease
// to run out.
func (s *Scheduler) releaseLease(l store.Lease) result {
	ctx, cancel := context.WithTimeout(context.Background(), bookkeepingTimeout)
	defer cancel()
	if err := s.deps.Store.ReleaseLease(ctx, l); err != nil {
		s.log.Error("scheduler: releasing a lease failed", "taskId", l.TaskID, "err", err)
	}
	return result{taskID: l.TaskID, kind: resultReleased}
}

// cleanup is the housekeeping: at most every CleanupInterval unless
// forced, and on the one process the Housekeeper elects, it prunes every
// kind of row past its retention (store.Prune).
func (s *Scheduler) cleanup(ctx context.Context, force bool) {
	s.cleanupMu.Lock()
	defer s.cleanupMu.Unlock()
	now := s.now()
	if !force && now.Sub(s.lastCleanup) < s.cfg.CleanupInterval {
		return
	}
	s.lastCleanup = now
	if h := s.deps.Housekeeper; h != nil {
		if leads, err := h.Check(ctx); !leads {
			if err != nil {
				s.log.Warn("scheduler: electing the housekeeper failed", "err", err)
			}
			return
		}
	}
	pruned, err := s.deps.Store.Prune(ctx, now, s.cfg.Retention)
	if err != nil {
		s.log.Error("scheduler: pruning failed", "err", err)
	}
	if pruned != (store.Pruned{}) {
		s.log.Info("scheduler: pruned old rows", "pruned", pruned)
	}
}

// bookkeepingTimeout bounds the writes that finish an occurrence; they run
// even when the delivery's context has ended.
const bookkeepingTimeout = 10 * time.Second

// heldLease is a lease kept alive by a heartbeat while a task is delivered.
// The heartbeat is a timer, not a goroutine: a delivery that ends before
// its first Heartbeat (nearly all of them) costs no goroutine and no
// wake-up. mu serializes a renewal with end.
type heldLease struct {
	mu    sync.Mutex
	lease store.Lease
	lost  bool
	ended bool
	timer *time.Timer
}

// hold starts renewing l every Heartbeat. If the lease is lost, the
// delivery's cancel is called (with no cause): another process owns the
// task now, or its owner deleted it.
func (s *Scheduler) hold(l store.Lease, cancel context.CancelCauseFunc) *heldLease {
	h := &heldLease{lease: l}
	h.mu.Lock() // a renewal reads h.timer
	defer h.mu.Unlock()
	h.timer = time.AfterFunc(s.cfg.Heartbeat, func() { s.renew(h, cancel) })
	return h
}

// renew is one heartbeat: it extends the lease and arms the next one, or
// cancels the delivery when the lease is lost.
func (s *Scheduler) renew(h *heldLease, cancel context.CancelCauseFunc) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		return
	}
	ctx, stop := context.WithTimeout(context.Background(), bookkeepingTimeout)
	renewed, err := s.deps.Store.RenewLease(ctx, h.lease, s.now().Add(s.cfg.LeaseTTL))
	stop()
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		h.lost = true
		s.log.Warn("scheduler: lease lost while delivering; stopping", "taskId", h.lease.TaskID)
		cancel(nil)
		return
	case err != nil:
		s.log.Error("scheduler: renewing a lease failed", "taskId", h.lease.TaskID, "err", err)
	default:
		h.lease = renewed
	}
	h.timer.Reset(s.cfg.Heartbeat)
}

// end stops the heartbeat, waiting for a renewal under way, and returns
// the lease as last renewed.
func (h *heldLease) end() (store.Lease, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended = true
	h.timer.Stop()
	return h.lease, h.lost
}

// process delivers one claimed occurrence, which c claimed, and records its
// outcome, handing h's slot off (slotHold.handOff) before it writes.
func (s *Scheduler) process(t store.Task, h *slotHold, c claim) (r result) {
	ctx, cancel := context.WithCancelCause(s.runCtx)
	defer cancel(nil)
	ctx, span := traceOccurrence(ctx, t, c)
	defer func() { traceResult(span, r) }()
	s.track(t.ID, cancel)
	defer s.untrack(t.ID)
	held := s.hold(t.Lease(), cancel)
	if err := h.await(ctx, t); err != nil {
		return s.unstarted(t, held, err)
	}
	started := s.now()

	p, perr := TaskPayload(t)
	var rec Recurrence
	if perr == nil {
		rec, perr = p.Recurrence()
	}
	if perr != nil {
		// A payload that does not decrypt or parse, or names no valid
		// recurrence, will not read better on a retry, and its recurrence
		// is unknown: the task fails for good, whatever it was.
		rec, perr = Recurrence{Type: push.RecurrenceNone}, unreadableError{perr}
	}
	if perr == nil && s.stale(t, started) {
		lease, _ := held.end()
		h.handOff()
		return s.expire(t, lease, rec, started)
	}
	var sent int
	var last push.Bookkeeping
	err := perr
	if err == nil {
		sent, last, err = s.fire(ctx, t, p, rec)
	}
	lease, lost := held.end()
	h.handOff()
	switch {
	case err != nil && (cancelled(ctx) || lost && s.deleted(t)):
		// Cancelled: told at once, or, when the notification was missed,
		// found by the heartbeat.
		return s.withdraw(t)
	case lost:
		s.deps.Courier.Keep(ctx, last)
		return result{taskID: t.ID, kind: resultLeaseLost}
	}
	if err != nil && s.runCtx.Err() != nil {
		// Interrupted by shutdown: the task did nothing wrong.
		return s.releaseLease(lease)
	}
	if err != nil {
		return s.failed(ctx, t, lease, rec, err)
	}
	return s.delivered(ctx, t, lease, rec, sent, started, last, h.awaited)
}

// unstarted ends an occurrence claimed ahead that did not start, why
// saying why: cancelled (nothing was sent; withdrawn), its lease lost, or
// taken back (Unclaim) or the scheduler stopping (the lease is given back,
// for the edited task's time or the next start).
func (s *Scheduler) unstarted(t store.Task, held *heldLease, why error) result {
	lease, lost := held.end()
	switch {
	case errors.Is(why, ErrCancelled):
		return s.withdraw(t)
	case lost:
		return result{taskID: t.ID, kind: resultLeaseLost}
	}
	return s.releaseLease(lease)
}

// stale reports whether the occurrence is too late to deliver: more than
// StaleAfter past its nominal time, on its first attempt or with a retry
// that itself fell that far behind.
func (s *Scheduler) stale(t store.Task, now time.Time) bool {
	if now.Sub(t.NextSendAt) <= s.cfg.StaleAfter {
		return false
	}
	return t.RetryCount == 0 || (!t.RetryAfter.IsZero() && now.Sub(t.RetryAfter) > s.cfg.StaleAfter)
}

// expire applies the stale guard: nothing is sent; a one-off task fails, a
// recurring one moves to its first future occurrence.
func (s *Scheduler) expire(t store.Task, l store.Lease, rec Recurrence, now time.Time) result {
	ctx, cancel := context.WithTimeout(context.Background(), bookkeepingTimeout)
	defer cancel()
	le := newLastError(now, t.NextSendAt, "stale")
	r := result{taskID: t.ID, kind: resultStale, reason: "stale", skipped: 1}
	var err error
	if rec.Recurring() {
		r.next, r.skipped = rec.NextAfter(t.NextSendAt, now)
		le.SkippedCount, le.NextSendAt = r.skipped, push.FormatTimestamp(r.next)
		err = s.deps.Store.RescheduleTask(ctx, l, r.next, le.json())
	} else {
		err = s.deps.Store.FailTask(ctx, l, t.RetryCount, le.json())
	}
	return s.bookkept(r, err)
}

// failed records a failed attempt: back off, or when the failure is
// permanent or the retries of its kind are spent (MaxGenerationRetries for
// an LLM failure, MaxDeliveryRetries otherwise), skip the occurrence
// (recurring) or fail the task (one-off).
func (s *Scheduler) failed(ctx context.Context, t store.Task, l store.Lease, rec Recurrence, err error) result {
	if until, ok := deferredUntil(err); ok {
		return s.deferred(t, l, until)
	}
	ctx, cancel := context.WithTimeout(tracing.Detached(ctx), bookkeepingTimeout)
	defer cancel()
	now := s.now()
	v := failure(err)
	le := newLastError(now, t.NextSendAt, err.Error())
	le.judge(v)
	r := result{taskID: t.ID, reason: err.Error(), permanent: v.permanent, retryCount: t.RetryCount}
	retries := s.cfg.MaxDeliveryRetries
	if v.generation {
		retries = s.cfg.MaxGenerationRetries
	}
	var werr error
	switch {
	case v.permanent || t.RetryCount >= retries:
		if rec.Recurring() {
			r.kind = resultSkipped
			r.next, _ = rec.NextAfter(t.NextSendAt, now)
			werr = s.deps.Store.RescheduleTask(ctx, l, r.next, le.json())
		} else {
			r.kind = resultFailed
			werr = s.deps.Store.FailTask(ctx, l, t.RetryCount, le.json())
		}
	default:
		r.kind = resultBackoff
		r.retryCount = t.RetryCount + 1
		r.next = now.Add(time.Duration(t.RetryCount+1) * s.cfg.RetryBackoff)
		werr = s.deps.Store.BackOffTask(ctx, l, r.next, le.json())
	}
	return s.bookkept(r, werr)
}

// delivered records a delivered occurrence, with the bookkeeping of its
// last push: a one-off task is deleted, a recurring one advances from its
// nominal time. awaited: someone waits for the record (completionContext).
func (s *Scheduler) delivered(ctx context.Context, t store.Task, l store.Lease, rec Recurrence, sent int, started time.Time, last push.Bookkeeping, awaited bool) result {
	r := result{taskID: t.ID, kind: resultDeleted, sent: sent, late: started.Sub(t.NextSendAt)}
	var next time.Time
	if rec.Recurring() {
		r.kind = resultAdvanced
		next, _ = rec.NextAfter(t.NextSendAt, s.now())
		r.next = next
	}
	if err := s.complete(ctx, l, next, last, awaited); err != nil {
		return result{taskID: t.ID, kind: resultCleanupFailed, reason: err.Error(), updateError: err.Error(), sent: sent}
	}
	return r
}

// complete writes a delivered occurrence and its last push's bookkeeping,
// retrying for up to a lease (courier.RetryWrite): the pushes went out, and
// if the write still fails the lease runs out and the occurrence is sent
// again with the same ids, which the service worker drops but which wake
// the device twice. The slot was handed off already, so nothing waits on the
// write to go on, unless the caller's answer waits for it: awaited
// (completionContext).
func (s *Scheduler) complete(ctx context.Context, l store.Lease, next time.Time, last push.Bookkeeping, awaited bool) error {
	return courier.RetryWrite(s.completionContext(ctx, awaited), s.cfg.LeaseTTL, s.cfg.Sleep, s.log, slog.Int64("taskId", l.TaskID),
		"recording a delivered occurrence", func(ctx context.Context) error {
			err := s.deps.Store.CompleteTask(ctx, l, next, last)
			if errors.Is(err, store.ErrLeaseLost) {
				return nil
			}
			return err
		})
}

// completionContext is what a delivered occurrence's completion is
// written with: detached from the delivery, and unhurried (store.Unhurried:
// it waits in the store's batch for others, so a trickle's completions
// commit together) unless awaited (an instant task's request and Tick
// answer once it is written) or more than three quarters of the tokens of
// writing are held. Each lingering completion holds one, and past that the
// next deliveries' handOff would soon wait for the linger to end: the
// write then goes at once and takes the lingering ones with it. (Half
// would end the linger of a 1 000/s trickle, whose completions hold about
// 30 of the default 64.)
func (s *Scheduler) completionContext(ctx context.Context, awaited bool) context.Context {
	ctx = tracing.Detached(ctx)
	if awaited || 4*len(s.writing) > 3*cap(s.writing) {
		return ctx
	}
	return store.Unhurried(ctx)
}

// bookkept turns a failed bookkeeping write into the standard's
// *_update_failed entries.
func (s *Scheduler) bookkept(r result, err error) result {
	switch {
	case err == nil, errors.Is(err, store.ErrLeaseLost):
		return r
	case r.kind == resultStale:
		return result{taskID: r.taskID, kind: resultStaleUpdateFailed, reason: r.reason, updateError: err.Error()}
	default:
		return result{taskID: r.taskID, kind: resultUpdateFailed, reason: r.reason, updateError: err.Error()}
	}
}
