package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"amsg/push/clocktest"
	"amsg/scheduler"
	"amsg/store"
	"amsg/store/storetest"
)

// Two instances on one PostgreSQL database: the heartbeat's campaign
// decides who leads and tells the followers; Check reads that decision
// without campaigning, and stops believing it once it is older than the
// hold; a released leadership passes to the other at its next campaign.
func TestLeadershipIsDecidedByTheCampaign(t *testing.T) {
	url := storetest.DatabaseURL(t)
	clk := clocktest.New(time.Now())
	const hold = 2 * time.Second
	var a, b *scheduler.Leadership
	var told []bool
	for i, l := range []**scheduler.Leadership{&a, &b} {
		st := storetest.Open(t, store.Config{DatabaseURL: url})
		*l = scheduler.NewLeadership(st.Leader("housekeeping", 3*time.Second), hold, clk.Now)
		t.Cleanup(func() { _ = (*l).Release() })
		if i == 0 {
			a.Follow(func(_ context.Context, leads bool) { told = append(told, leads) })
		}
	}
	ctx := t.Context()
	if leads, _ := a.Check(ctx); leads {
		t.Fatal("a leads before any campaign")
	}
	if leads, err := a.Campaign(ctx); err != nil || !leads {
		t.Fatalf("a's campaign = %v, %v", leads, err)
	}
	if leads, err := b.Campaign(ctx); err != nil || leads {
		t.Fatalf("b's campaign beside a leader = %v, %v", leads, err)
	}
	if leads, _ := a.Check(ctx); !leads {
		t.Error("a's Check does not say what its campaign decided")
	}
	if leads, _ := b.Check(ctx); leads {
		t.Error("b's Check says it leads")
	}
	clk.Add(hold)
	if leads, _ := a.Check(ctx); leads {
		t.Error("a still believes it leads a hold after its last campaign")
	}
	if leads, _ := a.Campaign(ctx); !leads {
		t.Fatal("a lost the leadership it holds")
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if leads, _ := a.Check(ctx); leads {
		t.Error("a leads after Release")
	}
	if leads, _ := a.Campaign(ctx); leads {
		t.Error("a campaigned after Release")
	}
	if leads, err := b.Campaign(ctx); err != nil || !leads {
		t.Errorf("b's campaign after a released = %v, %v", leads, err)
	}
	if !slices.Equal(told, []bool{true, true}) {
		t.Errorf("a's follower was told %v, want its two campaigns before Release", told)
	}
}

// recordingSender records the users a broadcast reaches.
type recordingSender struct {
	mu    sync.Mutex
	users []string
}

func (r *recordingSender) SendBroadcast(_ context.Context, _ store.Broadcast, userID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.users = append(r.users, userID)
	return nil
}

// On a shared database the broadcasts of a dead instance are resumed by
// the instance the housekeeping's campaign says leads, and only there.
func TestBroadcastsResumeWhenToldToLead(t *testing.T) {
	st := storetest.New(t)
	if err := st.CreateBroadcast(t.Context(), store.Broadcast{ID: "bc_1", Message: json.RawMessage(`{"message":"hi"}`),
		UserIDs: []string{"u1", "u2"}, RatePerSecond: 1000}); err != nil {
		t.Fatal(err)
	}
	// The broadcast has not advanced for longer than Idle: its instance died.
	clk := clocktest.New(time.Now().Add(scheduler.DefaultBroadcastIdle + time.Minute))
	bs := scheduler.NewBroadcasts(st, scheduler.BroadcastConfig{Shared: true, Now: clk.Now})
	sender := &recordingSender{}
	if err := bs.Start(sender); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bs.Stop)
	bs.Lead(t.Context(), false)
	bs.Wait()
	if len(sender.users) != 0 {
		t.Fatalf("an instance that does not lead sent to %v", sender.users)
	}
	bs.Lead(t.Context(), true)
	bs.Wait()
	if !slices.Equal(sender.users, []string{"u1", "u2"}) {
		t.Errorf("the leader sent to %v, want u1 and u2", sender.users)
	}
	if got, err := st.GetBroadcast(t.Context(), "bc_1"); err != nil || got.Status != store.BroadcastDone {
		t.Errorf("broadcast after the leader resumed it: %+v, %v", got, err)
	}
}

// renewal is a leader whose renewals the test makes fail: a lease leader
// whose database did not answer still says it leads while its lease lasts.
type renewal struct{ err error }

func (r *renewal) Check(context.Context) (bool, error) { return true, r.err }
func (r *renewal) Release() error                      { return nil }

// A campaign that failed does not extend the last decision: the instance
// stops believing it leads a hold after its last successful campaign.
func TestAFailedCampaignDoesNotExtendTheLead(t *testing.T) {
	clk := clocktest.New(time.Now())
	leader := &renewal{}
	l := scheduler.NewLeadership(leader, 2*time.Second, clk.Now)
	if leads, err := l.Campaign(t.Context()); err != nil || !leads {
		t.Fatalf("campaign = %v, %v", leads, err)
	}
	clk.Add(time.Second)
	leader.err = errors.New("database unreachable")
	if leads, err := l.Campaign(t.Context()); err == nil || !leads {
		t.Fatalf("failed campaign = %v, %v: want the lead that still holds, and the error", leads, err)
	}
	clk.Add(time.Second)
	if leads, _ := l.Check(t.Context()); leads {
		t.Error("a failed campaign extended the lead past its hold")
	}
	if leads, _ := l.Campaign(t.Context()); leads {
		t.Error("a failed campaign after the hold still leads")
	}
}
