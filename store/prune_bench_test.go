package store_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// BenchmarkPruneAStepOfALargeHistory is the housekeeping's prune of the
// delivery log, the message events and the outbox at a steady state: a
// history of 100 000 delivered pushes, one a second (an attempt, three
// events and an outbox row each), half of it past its retention; then each
// op of a step moves the clock a minute on and prunes the 60 pushes' rows
// that aged out, reading what the time indexes (before) or the rowid
// ranges (timeorder.go) lead it to. The outbox's step deletes the events
// of the rows it deletes, so the events' step finds none (only its search
// and its cap), unless it runs first.
func BenchmarkPruneAStepOfALargeHistory(b *testing.B) {
	const pushes, batch, users = 100_000, 100, 100
	clk := newClock()
	const keep = pushes / 2 * time.Second
	st := storetest.Open(b, store.Config{Path: filepath.Join(b.TempDir(), "amsg.db"), Now: clk.Now,
		DeliveryLogMaxAge: keep, DeliveryLogMaxRows: 10 * pushes, OutboxMaxAge: keep,
		OutboxMaxRowsPerUser: 10 * pushes, MessageEventsMaxRows: 10 * pushes})
	ctx := b.Context()
	payload := json.RawMessage(`{"messageKind":"content","message":"a reminder of about the usual length"}`)
	for i := 0; i < pushes; i += batch {
		bk := push.Bookkeeping{UserID: fmt.Sprintf("user-%d", i/batch%users)}
		for j := i; j < i+batch; j++ {
			id := fmt.Sprintf("m%d", j)
			bk.Record = append(bk.Record, store.OutboxMessage{MessageID: id, Payload: payload})
			bk.Attempts = append(bk.Attempts, push.Attempt{At: clk.Now(), MessageID: id, UserID: bk.UserID, DeviceID: 1,
				PushHost: "push.example", Try: 1, Status: 201, Outcome: push.OutcomeDelivered})
		}
		if err := st.RecordDeliveries(ctx, bk); err != nil {
			b.Fatal(err)
		}
		clk.Add(batch * time.Second)
	}
	steps := []struct {
		name  string
		prune func() (int, error)
	}{
		{"outbox", func() (int, error) { return st.CleanupOutbox(ctx) }},
		{"delivery log", func() (int, error) { return st.PruneDeliveryLog(ctx) }},
		{"message events", func() (int, error) { return st.PruneMessageEvents(ctx) }},
	}
	for _, step := range steps {
		b.Run(step.name, func(b *testing.B) {
			prune := func() int {
				n, err := step.prune()
				if err != nil {
					b.Fatal(err)
				}
				return n
			}
			prune() // what aged while the other steps ran
			deleted := 0
			b.ResetTimer()
			for b.Loop() {
				clk.Add(time.Minute)
				deleted += prune()
			}
			b.ReportMetric(float64(deleted)/float64(b.N), "rows/op")
		})
	}
}
