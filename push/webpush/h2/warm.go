package h2

import "context"

// Warm dials a connection to authority when the client has none open or
// being dialed, so that the next request finds the TCP, TLS and HTTP/2
// handshakes done; otherwise it returns at once. open reports a connection
// open when it returns (not one still being dialed by another caller). The
// scheduler warms a task's push services while the task waits ahead of its
// time (issue 24: the first push of a trickle otherwise dialed at its due
// time, and every push due during the handshakes waited for it). ErrNotH2
// says the origin does not speak h2.
func (c *Client) Warm(ctx context.Context, authority string) (open bool, err error) {
	p, err := c.pool(authority)
	if err != nil {
		return false, err
	}
	p.mu.Lock()
	if p.dropped || len(p.conns)+p.dialing > 0 {
		open = len(p.conns) > 0
		p.mu.Unlock()
		return open, nil
	}
	p.dialing++
	p.mu.Unlock()
	cc, err := p.dial(ctx)
	_, err = p.dialed(cc, err, false)
	return err == nil, err
}
