package courier

import (
	"context"

	"amsg/push"
)

// manyDevicesStore is a Store that reads many users' devices at once
// (store.Store.DevicesOf, at most store.MaxDevicesOfUsers users).
type manyDevicesStore interface {
	DevicesOf(ctx context.Context, userIDs []string) (map[string][]push.Device, error)
}

// maxPrefetchUsers bounds the users of one read; the rest read as rounds
// need them.
const maxPrefetchUsers = 1000

// Prefetch reads, in one read, the devices of those of userIDs whose
// devices the courier holds none fresh of, so that the rounds that follow
// find them in memory. The scheduler calls it with a claim's users: a
// burst's first rounds otherwise read each user's devices on its own, each
// read a statement on a connection of its own (on PostgreSQL, as many
// connections as rounds start at once; issue 24). Rounds to those users
// that start meanwhile wait for this read rather than read again. A read
// that fails is logged, and the rounds read for themselves.
func (c *Courier) Prefetch(ctx context.Context, userIDs []string) {
	st, ok := c.store.(manyDevicesStore)
	if !ok {
		return
	}
	if err := c.devices.prefetch(ctx, st, userIDs); err != nil && ctx.Err() == nil {
		c.log.Warn("courier: reading the devices of a claim's users failed; each round reads its own", "err", err)
	}
}

// prefetch reads the devices of the users of userIDs without a fresh
// entry with one read of st, and returns the read's error.
func (c *deviceCache) prefetch(ctx context.Context, st manyDevicesStore, userIDs []string) error {
	now := c.now()
	var entries []*userDevices
	c.mu.Lock()
	if len(c.users) >= maxCachedUsers {
		c.sweepLocked(now)
	}
	for _, id := range userIDs {
		if len(entries) == maxPrefetchUsers || len(c.users) >= maxCachedUsers {
			break
		}
		// A fresh entry is being read or was read recently (a duplicate
		// id's too).
		if u, read := c.entryLocked(id, now); read {
			entries = append(entries, u)
		}
	}
	c.mu.Unlock()
	if len(entries) == 0 {
		return nil
	}
	ids := make([]string, len(entries))
	for i, u := range entries {
		ids[i] = u.userID
	}
	devices, err := st.DevicesOf(ctx, ids)
	for _, u := range entries {
		if err != nil {
			u.unread = true
			c.forget(u) // before ready: a round that finds it again would spin
		} else {
			u.devices = devices[u.userID]
		}
		close(u.ready)
	}
	return err
}
