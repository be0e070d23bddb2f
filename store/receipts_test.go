package store_test

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
)

// Two instances that receive the same receipt at the same moment (a
// worker that retried while its first report was still in flight, through
// a load balancer) record it once: one of them says it was new.
func TestRecordReceiptsRacingInstancesCountOnce(t *testing.T) {
	a, b, _ := openTwice(t, store.Config{})
	ctx := t.Context()
	d, err := a.PutSubscription(ctx, alice, subscriptionJSON("https://push.example/race"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 20
	for i := range rounds {
		receipt := store.MessageEvent{UserID: alice, MessageID: fmt.Sprintf("m-race-%d", i), DeviceID: store.DeviceIDString(d.ID), Type: store.EventShown}
		var (
			start sync.WaitGroup
			done  sync.WaitGroup
			news  [2][]bool
			errs  [2]error
		)
		start.Add(1)
		for j, st := range []*store.Store{a, b} {
			done.Go(func() {
				start.Wait()
				news[j], errs[j] = st.RecordReceipts(ctx, []store.MessageEvent{receipt})
			})
		}
		start.Done()
		done.Wait()
		for j := range errs {
			if errs[j] != nil {
				t.Fatalf("round %d: instance %d: %v", i, j, errs[j])
			}
		}
		if news[0][0] == news[1][0] {
			t.Errorf("round %d: new for the two instances = %v, %v; want exactly one", i, news[0][0], news[1][0])
		}
		events, err := a.MessageTimeline(ctx, alice, receipt.MessageID)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != 1 {
			t.Errorf("round %d: %d events recorded (%v), want 1", i, len(events), summarize(events))
		}
	}
}

// The migration that makes a receipt unique keeps the first of the rows an
// older version recorded twice, and leaves other events alone.
func TestReceiptOnceMigrationKeepsTheFirstReport(t *testing.T) {
	path, url := storetest.Database(t)
	st := storetest.Open(t, store.Config{Path: path, DatabaseURL: url})
	raw := rawDB(t, path)
	if url != "" {
		var err error
		if raw, err = sql.Open("pgx", url); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { raw.Close() })
	}
	// The database as the version before had it: no index, a report
	// recorded twice by two instances, and a sent event twice, as sends
	// may be. Then the migration, run again on it.
	for _, statement := range []string{
		`DROP INDEX message_events_receipt`,
		`INSERT INTO message_events (at, user_id, message_id, device_id, type, detail) VALUES
			(1, 'u', 'm', '1', 'shown', '{"first":true}'), (2, 'u', 'm', '1', 'shown', '{}'),
			(3, 'u', 'm', '1', 'clicked', '{}'), (4, 'u', 'm', '', 'sent', '{}'), (5, 'u', 'm', '', 'sent', '{}')`,
	} {
		if _, err := raw.ExecContext(t.Context(), statement); err != nil {
			t.Fatalf("%s: %v", statement, err)
		}
	}
	if err := st.RunMigration(t.Context(), "CREATE UNIQUE INDEX message_events_receipt"); err != nil {
		t.Fatal(err)
	}
	events, err := st.MessageTimeline(t.Context(), "u", "m")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`shown 1 {"first":true}`, "clicked 1 {}", "sent  {}", "sent  {}"}
	if got := summarize(events); !slices.Equal(got, want) {
		t.Errorf("events after the migration = %q, want %q", got, want)
	}
	if again, err := st.RecordReceipts(t.Context(), []store.MessageEvent{{UserID: "u", MessageID: "m", DeviceID: "1", Type: store.EventShown}}); err != nil || again[0] {
		t.Errorf("RecordReceipts of the kept report = %v, %v; want it counted already", again, err)
	}
}

// Only a receipt's types are counted once; RecordReceipts refuses the
// others, which may repeat (AppendMessageEvents), and writes nothing.
func TestRecordReceiptsRefusesOtherEventTypes(t *testing.T) {
	st := storetest.New(t)
	batch := []store.MessageEvent{
		{UserID: alice, MessageID: "m-other", DeviceID: "1", Type: store.EventShown},
		{UserID: alice, MessageID: "m-other", DeviceID: "1", Type: store.EventSent},
	}
	if _, err := st.RecordReceipts(t.Context(), batch); !errors.Is(err, store.ErrInvalidMessageEvent) {
		t.Fatalf("RecordReceipts with a sent event = %v, want ErrInvalidMessageEvent", err)
	}
	if events, err := st.MessageTimeline(t.Context(), alice, "m-other"); err != nil || len(events) != 0 {
		t.Errorf("after a refused batch the timeline has %v, %v; want nothing", summarize(events), err)
	}
}
