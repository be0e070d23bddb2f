package scheduler

import (
	"context"
	"testing"

	"amsg/push"
	"amsg/store"
)

// leads is a Housekeeper whose answer the test sets.
type leads bool

func (l *leads) Check(context.Context) (bool, error) { return bool(*l), nil }

// Of several instances, only the elected housekeeper prunes finished tasks.
func TestCleanupRunsOnlyOnTheHousekeeper(t *testing.T) {
	h := newHarness(t, Config{})
	elected := leads(false)
	h.sched.deps.Housekeeper = &elected
	old := h.insert(alice, Payload{MessageType: push.TypeFixed, UserMessage: str("x")}, start)
	h.tick() // no device: fails for good
	if h.task(alice, old.UUID).Status != store.TaskFailed {
		t.Fatal("not failed")
	}
	h.clk.Add(DefaultFinishedRetention + DefaultCleanupInterval)
	h.tick()
	if h.gone(alice, old.UUID) {
		t.Error("deleted by an instance that is not the housekeeper")
	}
	elected = true
	h.clk.Add(DefaultCleanupInterval)
	h.tick()
	if !h.gone(alice, old.UUID) {
		t.Error("the housekeeper kept an expired finished task")
	}
}
