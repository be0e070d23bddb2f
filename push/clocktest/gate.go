package clocktest

import (
	"context"
	"time"
)

// Gate is a fake wait that holds: each wait asked for is told on Asked,
// and returns only once the test calls Open, or with ctx's error when ctx
// ends first. A test moves its Clock while a component waits there, then
// opens the gate.
type Gate struct {
	Asked chan time.Duration
	open  chan struct{}
}

// NewGate returns a closed gate that tells up to 16 waits without a reader.
func NewGate() *Gate { return &Gate{Asked: make(chan time.Duration, 16), open: make(chan struct{})} }

// Sleep waits at the gate. Pass the method value g.Sleep as a component's
// Sleep.
func (g *Gate) Sleep(ctx context.Context, d time.Duration) error {
	g.Asked <- d
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Open lets every wait, under way and to come, return. Call it once.
func (g *Gate) Open() { close(g.open) }
