package courier

import "context"

// warmer is a Sender that can open a push service's connection ahead of a
// push (webpush.Sender.Warm).
type warmer interface {
	Warm(ctx context.Context, endpoint string) bool
}

// Warm opens connections to the push services of userID's devices that
// have none, ahead of a push to them: the scheduler calls it for a task
// claimed ahead of its time, so that the first push of a trickle does not
// dial at its due time while the pushes due during the handshakes wait
// for the origin's slowly opening key (issue 24). The devices read are the
// ones the push will use (deviceCache). An origin with a connection open
// opens at once for the pushes that follow: the connection the slow key
// waits for is there.
func (c *Courier) Warm(ctx context.Context, userID string) {
	w, ok := c.sender.(warmer)
	if !ok {
		return
	}
	u, err := c.devices.acquire(ctx, userID)
	if err != nil {
		return // the push reads them again and reports the error
	}
	for _, d := range u.list() {
		if w.Warm(ctx, d.Subscription.Endpoint) {
			c.origins.warm(originOf(d.Subscription.Endpoint))
		}
	}
}

// warm marks key as having a connection open, so a slowly opening
// limiter lets its first holders in at once.
func (l *limiter) warm(key string) {
	if !l.opensSlowly {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rememberLeft(key)
}
