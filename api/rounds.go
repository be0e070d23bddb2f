package api

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// roundGuard bounds LLM rounds: how many run at once, over all and per
// caller, and how long and how many run on after their client left.
type roundGuard struct {
	limits Limits
	log    *slog.Logger

	mu         sync.Mutex
	running    int
	perOwner   map[string]int
	perAddress map[string]int
	orphans    int

	orphaned prometheus.Gauge // nil without metrics
}

func newRoundGuard(l Limits, log *slog.Logger, reg prometheus.Registerer) (*roundGuard, error) {
	g := &roundGuard{limits: l, log: log, perOwner: map[string]int{}, perAddress: map[string]int{}}
	if reg != nil {
		g.orphaned = prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "amsg_instant_orphaned_rounds",
			Help: "LLM rounds running on after their client left.",
		})
		if err := reg.Register(g.orphaned); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// round is one admitted LLM round.
type round struct {
	ctx      context.Context
	cancel   context.CancelFunc
	finished chan struct{}
	release  func()
}

// admit starts a round for owner (a proven user, else the client address)
// from address (the client's, whatever user it names), or answers 429 when
// a concurrency limit is reached. The round's context
// outlives the request — a client that goes away must not stop the model or
// the pushes — but only within the orphan bounds. The caller must call end.
func (g *roundGuard) admit(w http.ResponseWriter, r *http.Request, owner, address string) (*round, error) {
	g.mu.Lock()
	switch {
	case g.running >= g.limits.MaxRounds:
		g.mu.Unlock()
		return nil, rateLimited(w, time.Second, "concurrentRounds")
	case g.perOwner[owner] >= g.limits.MaxRoundsPerUser:
		g.mu.Unlock()
		return nil, rateLimited(w, time.Second, "concurrentRoundsPerUser")
	case g.perAddress[address] >= g.limits.MaxRoundsPerAddress:
		g.mu.Unlock()
		return nil, rateLimited(w, time.Second, "concurrentRoundsPerAddress")
	}
	g.running++
	g.perOwner[owner]++
	g.perAddress[address]++
	g.mu.Unlock()

	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	rd := &round{ctx: ctx, cancel: cancel, finished: make(chan struct{})}
	var once sync.Once
	rd.release = func() {
		once.Do(func() {
			g.mu.Lock()
			g.running--
			if g.perOwner[owner]--; g.perOwner[owner] <= 0 {
				delete(g.perOwner, owner)
			}
			if g.perAddress[address]--; g.perAddress[address] <= 0 {
				delete(g.perAddress, address)
			}
			g.mu.Unlock()
		})
	}
	go g.watch(r, rd)
	return rd, nil
}

// end finishes the round; call it before the handler returns.
func (rd *round) end() {
	close(rd.finished)
	rd.cancel()
	rd.release()
}

// watch turns a round whose client left into an orphan, bounded in time,
// or stops it at once when the orphans are at their cap.
func (g *roundGuard) watch(r *http.Request, rd *round) {
	select {
	case <-rd.finished:
		return
	case <-r.Context().Done():
	}
	select {
	case <-rd.finished: // the request's context also ends when it is answered
		return
	default:
	}
	g.mu.Lock()
	adopt := g.orphans < g.limits.MaxOrphanRounds
	if adopt {
		g.orphans++
		g.setOrphaned()
	}
	g.mu.Unlock()
	if !adopt {
		g.log.WarnContext(rd.ctx, "instant round stopped: its client left and the orphaned rounds are at their cap",
			"max_orphan_rounds", g.limits.MaxOrphanRounds)
		rd.cancel()
		return
	}
	timer := time.NewTimer(g.limits.OrphanRoundTimeout)
	select {
	case <-rd.finished:
	case <-timer.C:
		g.log.WarnContext(rd.ctx, "instant round stopped: it ran too long after its client left",
			"orphan_round_timeout", g.limits.OrphanRoundTimeout)
		rd.cancel()
		<-rd.finished
	}
	timer.Stop()
	g.mu.Lock()
	g.orphans--
	g.setOrphaned()
	g.mu.Unlock()
}

// setOrphaned publishes the orphan count; g.mu is held.
func (g *roundGuard) setOrphaned() {
	if g.orphaned != nil {
		g.orphaned.Set(float64(g.orphans))
	}
}
