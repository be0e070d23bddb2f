package courier

import (
	"context"
	"slices"
	"sync"
	"time"

	"amsg/push"
)

// limiter bounds the holders of each key (a user, a push service origin) at
// once. A key's slots exist only while someone holds or waits for one, so
// the map stays as small as the work in flight.
//
// A limiter that opens slowly lets a key that has nothing in flight have one
// holder until that holder leaves: a burst to a push service nobody is
// sending to then opens one connection, which HTTP/2 shares with the rest,
// instead of a TLS handshake per request racing for the cores. A push alone
// (a trickle) waits for nothing, a first request that hangs holds the
// others back for openAfter at most, and a key whose last holder left
// within warmFor opens at once: its connection is still there.
type limiter struct {
	per         int
	opensSlowly bool
	now         func() time.Time
	mu          sync.Mutex
	keys        map[string]*slots
	left        map[string]time.Time // when a slowly opening key's last holder left
}

type slots struct {
	ch   chan struct{}
	refs int // holders and waiters
	// open is closed when the key's first holder leaves; a key of a
	// limiter that opens at once starts open.
	open   chan struct{}
	opened bool
	timer  *time.Timer // opens the key after openAfter
}

// openAfter bounds how long a slow limiter's key waits for its first
// holder: a TLS handshake and one request take a few milliseconds. warmFor
// is how long a key stays warm after its last holder left: less than the
// 90 s the sender's transport keeps an idle connection. At most maxWarm
// keys are remembered.
const (
	openAfter = 250 * time.Millisecond
	warmFor   = 60 * time.Second
	maxWarm   = 10_000
)

func newLimiter(per int) *limiter { return &limiter{per: per, keys: map[string]*slots{}} }

// newSlowLimiter is newLimiter whose keys open slowly, on now's clock.
func newSlowLimiter(per int, now func() time.Time) *limiter {
	l := newLimiter(per)
	l.opensSlowly, l.now, l.left = true, now, map[string]time.Time{}
	return l
}

// openAtOnce is the open channel of keys that do not wait for a first holder.
var openAtOnce = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// acquire takes one of key's slots, waiting until one frees or ctx ends.
func (l *limiter) acquire(ctx context.Context, key string) error {
	l.mu.Lock()
	s := l.keys[key]
	first := s == nil
	if first {
		s = &slots{ch: make(chan struct{}, l.per), open: openAtOnce, opened: true}
		if left, ok := l.left[key]; l.opensSlowly && (!ok || l.now().Sub(left) >= warmFor) {
			s.open, s.opened = make(chan struct{}), false
			s.timer = time.AfterFunc(openAfter, func() { l.openKey(s) })
		}
		l.keys[key] = s
	}
	s.refs++
	l.mu.Unlock()
	if !first {
		select {
		case <-s.open:
		case <-ctx.Done():
			l.unref(key, s)
			return ctx.Err()
		}
	}
	select {
	case s.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		l.unref(key, s)
		return ctx.Err()
	}
}

// release gives back a slot acquire took.
func (l *limiter) release(key string) {
	l.mu.Lock()
	s := l.keys[key]
	l.mu.Unlock()
	l.openKey(s) // the first holder is leaving, if it was not open already
	<-s.ch
	l.unref(key, s)
}

// rememberLeft notes that key's last holder left now; past maxWarm keys,
// the cold ones are forgotten, and if all are warm, all of them.
func (l *limiter) rememberLeft(key string) {
	now := l.now()
	if len(l.left) >= maxWarm {
		for k, t := range l.left {
			if now.Sub(t) >= warmFor {
				delete(l.left, k)
			}
		}
		if len(l.left) >= maxWarm {
			clear(l.left)
		}
	}
	l.left[key] = now
}

// openKey lets the waiters of a slowly opening key in.
func (l *limiter) openKey(s *slots) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !s.opened {
		s.opened = true
		s.timer.Stop()
		close(s.open)
	}
}

func (l *limiter) unref(key string, s *slots) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.refs--; s.refs == 0 {
		delete(l.keys, key)
		if l.opensSlowly {
			l.rememberLeft(key)
		}
	}
}

// deviceCache keeps users' devices in memory for maxAge after they were
// read, so a backlog of one user's pushes (or many users' scheduled pushes,
// round after round) reads and decrypts the subscriptions once rather than
// per push. Forget drops a user whose subscriptions changed; an entry older
// than maxAge is read again. At most maxCachedUsers entries are kept.
type deviceCache struct {
	store  Store
	maxAge time.Duration
	now    func() time.Time

	mu    sync.Mutex
	users map[string]*userDevices
}

// maxCachedUsers bounds the cache; past it, expired entries are swept.
const maxCachedUsers = 10_000

// userDevices is one user's devices. ready is closed once the read ended;
// devices and err are set before that and, apart from drop, not after.
type userDevices struct {
	userID string
	ready  chan struct{}
	readAt time.Time

	// unread is set when a Prefetch's read failed: the rounds waiting
	// read for themselves.
	unread bool

	mu      sync.Mutex
	devices []push.Device
	err     error
}

func newDeviceCache(st Store, maxAge time.Duration, now func() time.Time) *deviceCache {
	return &deviceCache{store: st, maxAge: maxAge, now: now, users: map[string]*userDevices{}}
}

// acquire returns userID's devices, read now unless a fresh entry is
// cached; concurrent rounds to a user wait for one read.
func (c *deviceCache) acquire(ctx context.Context, userID string) (*userDevices, error) {
	for {
		u, read := c.entry(userID)
		if read {
			u.devices, u.err = c.store.Devices(ctx, userID)
			close(u.ready)
			if u.err != nil {
				c.forget(u)
				return nil, u.err
			}
			return u, nil
		}
		select {
		case <-u.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		switch {
		case u.unread:
			continue // a Prefetch failed: this round reads for itself
		case u.err != nil:
			return nil, u.err
		}
		return u, nil
	}
}

// entry returns userID's fresh entry, or a new one that the caller must
// read (read), which rounds that start meanwhile wait for.
func (c *deviceCache) entry(userID string) (u *userDevices, read bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entryLocked(userID, now)
}

// entryLocked is entry at now, with c.mu held.
func (c *deviceCache) entryLocked(userID string, now time.Time) (u *userDevices, read bool) {
	if u := c.users[userID]; u != nil && u.fresh(now, c.maxAge) {
		return u, false
	}
	if len(c.users) >= maxCachedUsers {
		c.sweepLocked(now)
	}
	u = &userDevices{userID: userID, ready: make(chan struct{}), readAt: now}
	c.users[userID] = u // rounds holding an older entry keep it
	return u, true
}

// fresh reports whether u may serve a new round: read recently, and not
// failed.
func (u *userDevices) fresh(now time.Time, maxAge time.Duration) bool {
	select {
	case <-u.ready:
		return u.err == nil && now.Sub(u.readAt) < maxAge
	default:
		return true // being read now
	}
}

// sweepLocked drops the entries that are no longer fresh.
func (c *deviceCache) sweepLocked(now time.Time) {
	for id, u := range c.users {
		if !u.fresh(now, c.maxAge) {
			delete(c.users, id)
		}
	}
}

// forget drops u unless a newer entry replaced it.
func (c *deviceCache) forget(u *userDevices) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.users[u.userID] == u {
		delete(c.users, u.userID)
	}
}

// Forget drops userID's devices from memory, so the next round reads them:
// call it when the user's subscriptions change.
func (c *Courier) Forget(userID string) {
	c.devices.mu.Lock()
	defer c.devices.mu.Unlock()
	delete(c.devices.users, userID)
}

// list returns the devices as they are now.
func (u *userDevices) list() []push.Device {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.devices
}

// drop forgets devices a push service reported gone (the store deletes
// them), so the next push of the round skips them.
func (u *userDevices) drop(ids []int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	kept := make([]push.Device, 0, len(u.devices))
	for _, d := range u.devices {
		if !slices.Contains(ids, d.ID) {
			kept = append(kept, d)
		}
	}
	u.devices = kept
}
