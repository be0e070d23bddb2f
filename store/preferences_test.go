package store_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// Preferences round-trip; a change out of bounds fails and keeps what was
// stored.
func TestPreferencesRoundTripAndRefuseOutOfBounds(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	if p, err := st.Preferences(ctx, alice); err != nil || p.TimeZone != "" || p.QuietHours != nil || p.DailyLimit != nil {
		t.Fatalf("preferences before any = %+v, %v; want none", p, err)
	}
	limit := 3
	want := store.Preferences{TimeZone: "Europe/Berlin", QuietHours: &store.QuietHours{Start: 22 * 60, End: 7 * 60}, DailyLimit: &limit}
	if _, err := st.UpdatePreferences(ctx, alice, func(store.Preferences) store.Preferences { return want }); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []store.Preferences{
		{QuietHours: &store.QuietHours{Start: 60, End: 60}},
		{QuietHours: &store.QuietHours{Start: 0, End: store.MinutesPerDay}},
		{DailyLimit: new(int(-1))},
	} {
		_, err := st.UpdatePreferences(ctx, alice, func(store.Preferences) store.Preferences { return bad })
		if !errors.Is(err, store.ErrInvalidPreferences) {
			t.Errorf("UpdatePreferences(%+v) = %v; want ErrInvalidPreferences", bad, err)
		}
	}
	got, err := st.Preferences(ctx, alice)
	if err != nil || got.TimeZone != want.TimeZone || *got.QuietHours != *want.QuietHours || *got.DailyLimit != 3 {
		t.Fatalf("preferences = %+v, %v; want %+v", got, err, want)
	}
	cleared, err := st.UpdatePreferences(ctx, alice, func(p store.Preferences) store.Preferences {
		p.QuietHours = nil
		return p
	})
	if err != nil || cleared.QuietHours != nil || cleared.TimeZone != "Europe/Berlin" {
		t.Fatalf("cleared quiet hours = %+v, %v", cleared, err)
	}
	if other, err := st.Preferences(ctx, bob); err != nil || other.DailyLimit != nil {
		t.Fatalf("bob's preferences = %+v, %v; want none", other, err)
	}
}

// A deferred occurrence is listed until it is delivered, and is known as a
// release when claimed.
func TestDeferTaskMarksTheOccurrence(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	task := insertTask(t, st, alice, 1, clk.Now())
	if released, err := st.IsDeferred(ctx, task); err != nil || released {
		t.Fatalf("IsDeferred before = %v, %v", released, err)
	}
	until := clk.Now().Add(9 * time.Hour)
	if err := st.DeferTask(ctx, claimOne(t, st, clk.Now()), until); err != nil {
		t.Fatal(err)
	}
	deferred, err := st.DeferredTasks(ctx, alice)
	if err != nil || !deferred[task.ID].Equal(until) {
		t.Fatalf("DeferredTasks = %v, %v; want task %d until %s", deferred, err, task.ID, until)
	}
	if tasks, err := st.ClaimDueTasks(ctx, clk.Now(), time.Minute, 1); err != nil || len(tasks) != 0 {
		t.Fatalf("claimed %d tasks before the window ends (%v)", len(tasks), err)
	}
	l := claimOne(t, st, until)
	claimed, err := st.Task(ctx, alice, task.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if released, err := st.IsDeferred(ctx, claimed); err != nil || !released {
		t.Fatalf("IsDeferred of the release = %v, %v; want true", released, err)
	}
	if err := st.CompleteTask(ctx, l, until.Add(24*time.Hour), push.Bookkeeping{}); err != nil {
		t.Fatal(err)
	}
	if deferred, err := st.DeferredTasks(ctx, alice); err != nil || len(deferred) != 0 {
		t.Fatalf("DeferredTasks after delivery = %v, %v; want none", deferred, err)
	}
}

// A user's day holds limit slots, even when asked for at once; a key that
// took one keeps it.
func TestTakeDailySlotCountsEachKeyOnce(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	const limit = 3
	keys := []string{"a", "b", "c", "d", "e", "f"}
	within := make([]bool, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() {
			ok, err := st.TakeDailySlot(ctx, alice, "2026-03-01", k, limit)
			if err != nil {
				t.Error(err)
			}
			within[i] = ok
		})
	}
	wg.Wait()
	var taken []string
	for i, ok := range within {
		if ok {
			taken = append(taken, keys[i])
		}
	}
	if len(taken) != limit {
		t.Fatalf("slots taken by %v; want %d", taken, limit)
	}
	if ok, err := st.TakeDailySlot(ctx, alice, "2026-03-01", taken[0], limit); err != nil || !ok {
		t.Fatalf("a key that took a slot asks again: %v, %v; want true", ok, err)
	}
	if ok, err := st.TakeDailySlot(ctx, alice, "2026-03-02", "g", limit); err != nil || !ok {
		t.Fatalf("the next day: %v, %v; want true", ok, err)
	}
	clk.Add(4 * 24 * time.Hour)
	p, err := st.Prune(ctx, clk.Now(), store.Retention{})
	if err != nil || p.DailySlots != limit+1 {
		t.Fatalf("Prune = %+v, %v; want %d daily slots", p, err, limit+1)
	}
}

// BenchmarkPreferencesOfAUserWithout is the read every proactive occurrence
// makes (scheduler/quiet.go) for the common user, who set none.
func BenchmarkPreferencesOfAUserWithout(b *testing.B) {
	st := storetest.New(b)
	ctx := b.Context()
	for b.Loop() {
		if _, err := st.Preferences(ctx, alice); err != nil {
			b.Fatal(err)
		}
	}
}
