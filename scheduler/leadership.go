package scheduler

import (
	"context"
	"sync"
	"time"

	"amsg/store"
)

// Leadership is one leadership among the instances on a database (the
// housekeeping's, the webhooks'), decided in one place: the instance's
// heartbeat campaigns once a beat (Campaign), and the work that needs the
// leader reads the decision (Check: the scheduler's Housekeeper, the
// webhook dispatcher's Leader) or is told it (Follow: the broadcasts)
// instead of campaigning itself.
//
// A decision holds for hold after its campaign was sent, and Check says
// this instance does not lead once it has passed without a new one: hold is
// shorter than the leader's ttl (a lease's, which the campaign renews), so
// no other instance can have taken the leadership while this one still
// believes it leads. The leader's own fence (a lease's epoch, an advisory
// lock's session) is unchanged.
type Leadership struct {
	leader store.Leader
	hold   time.Duration
	now    func() time.Time

	// campaign serializes Campaign and Release, so a campaign under way
	// cannot take the leadership back after Release gave it up.
	campaign  sync.Mutex
	mu        sync.Mutex
	leads     bool
	decidedAt time.Time
	released  bool
	followers []func(ctx context.Context, leads bool)
}

// NewLeadership decides leader's leadership on every Campaign; now nil is
// time.Now.
func NewLeadership(leader store.Leader, hold time.Duration, now func() time.Time) *Leadership {
	if now == nil {
		now = time.Now
	}
	return &Leadership{leader: leader, hold: hold, now: now}
}

// Follow tells f the decision of every campaign from now on, on the
// campaigning goroutine.
func (l *Leadership) Follow(f func(ctx context.Context, leads bool)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.followers = append(l.followers, f)
}

// Campaign takes the leadership when it is free, or keeps it, records the
// decision and tells the followers. A campaign that failed never extends
// the last decision. After Release it decides nothing.
func (l *Leadership) Campaign(ctx context.Context) (bool, error) {
	l.campaign.Lock()
	defer l.campaign.Unlock()
	l.mu.Lock()
	released := l.released
	l.mu.Unlock()
	if released {
		return false, nil
	}
	sent := l.now()
	leads, err := l.leader.Check(ctx)
	l.mu.Lock()
	if err != nil {
		// Unknown whether the leadership was renewed: the last decision
		// holds no longer than it did.
		leads = leads && l.holdsLocked()
		l.leads = leads
	} else {
		l.leads, l.decidedAt = leads, sent
	}
	followers := l.followers
	l.mu.Unlock()
	for _, f := range followers {
		f(ctx, leads)
	}
	return leads, err
}

// Check reports the last campaign's decision while it holds. It never
// campaigns: many readers cost the database nothing.
func (l *Leadership) Check(context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holdsLocked(), nil
}

// holdsLocked reports whether the last decision was to lead and still
// holds; l.mu is held.
func (l *Leadership) holdsLocked() bool {
	return l.leads && l.now().Before(l.decidedAt.Add(l.hold))
}

// Release gives the leadership up for good: Check and Campaign say no from
// now on.
func (l *Leadership) Release() error {
	l.campaign.Lock()
	defer l.campaign.Unlock()
	l.mu.Lock()
	l.leads, l.released = false, true
	l.mu.Unlock()
	return l.leader.Release()
}
