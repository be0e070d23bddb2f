package store_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// A delivered push's queued, sent and accepted events are one stored row,
// and read back as the three.
func TestADeliveryTellsItsEventsFromOneRow(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	insertTask(t, st, alice, 1, clk.now)
	lease := claimOne(t, st, clk.now)
	sentAt := clk.now.Add(-time.Second)
	if err := st.CompleteTask(ctx, lease, time.Time{}, push.Bookkeeping{UserID: alice, Record: []store.OutboxMessage{outboxMessage("m1", 0)},
		Attempts: []push.Attempt{{At: sentAt, MessageID: "m1", UserID: alice, DeviceID: 4, PushHost: "push.example", Try: 1, Status: 201, Outcome: push.OutcomeDelivered}}}); err != nil {
		t.Fatal(err)
	}
	if n, err := st.MessageEventRows(ctx); err != nil || n != 1 {
		t.Errorf("a delivered push's events are %d rows (%v), want one", n, err)
	}
	got, err := st.MessageTimeline(ctx, alice, "m1")
	if want := []string{"queued  {}", "sent  {}", `accepted 4 {"pushHost":"push.example","status":201,"try":1}`}; err != nil || !reflect.DeepEqual(summarize(got), want) {
		t.Fatalf("timeline = %q, %v; want %q", summarize(got), err, want)
	}
	if !got[0].At.Equal(clk.now) || !got[1].At.Equal(sentAt) || !got[2].At.Equal(sentAt) {
		t.Errorf("times %v, %v, %v; want queued at %v, sent and accepted at %v", got[0].At, got[1].At, got[2].At, clk.now, sentAt)
	}
	if got[1].Seq != got[0].Seq+1 || got[2].Seq != got[1].Seq+1 {
		t.Errorf("seqs %d, %d, %d; want three in a row", got[0].Seq, got[1].Seq, got[2].Seq)
	}

	// Recorded in the outbox first, then sent: the queued event's row, then
	// one of sent and accepted.
	if err := st.AppendOutbox(ctx, alice, []store.OutboxMessage{outboxMessage("m2", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordDeliveries(ctx, push.Bookkeeping{UserID: alice, Delivered: []string{"m2"}, Attempts: []push.Attempt{
		{At: sentAt, MessageID: "m2", UserID: alice, DeviceID: 4, Try: 1, Status: 201, Outcome: push.OutcomeDelivered}}}); err != nil {
		t.Fatal(err)
	}
	if n, err := st.MessageEventRows(ctx); err != nil || n != 3 {
		t.Errorf("after a push recorded first and sent after, the events are %d rows (%v), want three", n, err)
	}
	all, err := st.MessageEventsAfter(ctx, got[0].Seq, store.MaxMessageEventsPage)
	if want := []string{"sent  {}", `accepted 4 {"pushHost":"push.example","status":201,"try":1}`, "queued  {}", "sent  {}", `accepted 4 {"status":201,"try":1}`}; err != nil || !reflect.DeepEqual(summarize(all), want) {
		t.Errorf("MessageEventsAfter(the first queued) = %q, %v; want %q", summarize(all), err, want)
	}
}

// Whatever runs of events are stored in shared rows, every reader reads
// the events appended: in order, each with its own Seq, page by page, per
// message, per day, in a user's inventory and deletion. Receipts, which
// take the next Seq without the store's help, come between them.
func TestStoredEventRowsReadAsTheEventsAppended(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(24, 3))
	var appended []store.MessageEvent
	receipts := 0
	for batch := range 60 {
		var events []store.MessageEvent
		for range 1 + rng.IntN(4) {
			events = append(events, eventRun(rng, clk.now, batch)...)
		}
		if err := st.AppendMessageEvents(ctx, events...); err != nil {
			t.Fatal(err)
		}
		for i := range events {
			events[i].At = cmp.Or(events[i].At, clk.now)
		}
		appended = append(appended, events...)
		if batch%3 == 0 {
			receipts++
			shown := store.MessageEvent{At: clk.now, UserID: alice, MessageID: "m1", DeviceID: fmt.Sprint(receipts), Type: store.EventShown}
			if _, err := st.RecordReceipts(ctx, []store.MessageEvent{shown}); err != nil {
				t.Fatal(err)
			}
			appended = append(appended, shown)
		}
		clk.Add(7 * time.Hour)
	}

	all, err := st.MessageEventsAfter(ctx, 0, store.MaxMessageEventsPage)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := eventLines(all), eventLines(appended); !slices.Equal(got, want) {
		t.Fatalf("MessageEventsAfter(0) =\n%q\nwant\n%q", got, want)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Seq <= all[i-1].Seq {
			t.Fatalf("seq %d after %d", all[i].Seq, all[i-1].Seq)
		}
	}
	if rows, err := st.MessageEventRows(ctx); err != nil || rows >= len(all) {
		t.Errorf("%d events in %d rows (%v), want runs sharing rows", len(all), rows, err)
	}

	for _, limit := range []int{1, 2, 3, 5} {
		var paged []store.MessageEvent
		for cursor := int64(0); ; {
			page, err := st.MessageEventsAfter(ctx, cursor, limit)
			if err != nil {
				t.Fatal(err)
			}
			paged = append(paged, page...)
			if len(page) < limit { // a short page is the end, as the webhooks' fan-out takes it
				break
			}
			cursor = page[len(page)-1].Seq
		}
		if !reflect.DeepEqual(paged, all) {
			t.Errorf("pages of %d read %d events, want the %d read at once", limit, len(paged), len(all))
		}
	}
	for i, e := range all {
		for _, after := range []int64{e.Seq - 1, e.Seq} {
			got, err := st.MessageEventsAfter(ctx, after, store.MaxMessageEventsPage)
			want := all[i:]
			if after == e.Seq {
				want = all[i+1:]
			}
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("MessageEventsAfter(%d) = %d events (%v), want the %d from event %d", after, len(got), err, len(want), i)
			}
		}
	}

	for _, user := range []string{alice, bob} {
		for m := range 4 {
			id := fmt.Sprint("m", m)
			got, err := st.MessageTimeline(ctx, user, id)
			want := slices.DeleteFunc(slices.Clone(all), func(e store.MessageEvent) bool { return e.UserID != user || e.MessageID != id })
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("MessageTimeline(%s, %s) = %q, %v; want %q", user, id, eventLines(got), err, eventLines(want))
			}
		}
	}

	for _, types := range [][]string{store.MessageEventTypes, {store.EventSent}, {store.EventQueued, store.EventShown}, {store.EventAccepted}} {
		for _, since := range []time.Time{all[0].At, all[len(all)/3].At, all[len(all)/2].At.Add(-30 * time.Minute)} {
			got, err := st.EventsPerDay(ctx, since, types)
			if want := countPerDay(all, since, types); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("EventsPerDay(%v, %q) =\n%+v, %v\nwant\n%+v", since, types, got, err, want)
			}
		}
	}

	inv, err := st.CloudInventory(ctx, alice)
	if err != nil || len(inv.Resources) != 1 {
		t.Fatalf("alice's inventory = %+v, %v; want the delivery log", inv.Resources, err)
	}
	var events, bytes int64
	for _, e := range all {
		if e.UserID == alice {
			detail := cmp.Or(string(e.Detail), "{}")
			events, bytes = events+1, bytes+int64(len(e.MessageID)+len(e.DeviceID)+len(e.Type)+len(detail))
		}
	}
	if r := inv.Resources[0]; r.Label != fmt.Sprintf("delivery log (0 attempts, %d message events)", events) || r.ByteSize != bytes {
		t.Errorf("alice's delivery log: %q of %d bytes; want %d events of %d bytes", r.Label, r.ByteSize, events, bytes)
	}
	d, err := st.DeleteUser(ctx, alice)
	if err != nil || d.Events != int(events) {
		t.Errorf("DeleteUser(alice) = %+v, %v; want %d events deleted", d, err, events)
	}
	left, err := st.MessageEventsAfter(ctx, 0, store.MaxMessageEventsPage)
	if want := slices.DeleteFunc(all, func(e store.MessageEvent) bool { return e.UserID == alice }); err != nil || !reflect.DeepEqual(left, want) {
		t.Errorf("after alice's deletion %d events are left (%v), want bob's %d", len(left), err, len(want))
	}
}

// eventRun is a run of events one write may tell: a delivery's (with or
// without its queued event), one that cannot share a row (times or
// particulars that differ), or an event of another type.
func eventRun(rng *rand.Rand, now time.Time, batch int) []store.MessageEvent {
	user := []string{alice, bob}[rng.IntN(2)]
	msg := fmt.Sprint("m", rng.IntN(4))
	at := now.Add(-time.Duration(rng.IntN(90_000)) * time.Millisecond)
	accepted := store.MessageEvent{At: at, UserID: user, MessageID: msg, DeviceID: fmt.Sprint(rng.IntN(3) + 1), Type: store.EventAccepted,
		Detail: json.RawMessage(fmt.Sprintf(`{"pushHost":"push.example","status":201,"try":%d}`, batch))}
	sent := store.MessageEvent{At: at, UserID: user, MessageID: msg, Type: store.EventSent}
	queued := store.MessageEvent{At: now, UserID: user, MessageID: msg, Type: store.EventQueued}
	switch rng.IntN(9) {
	case 0:
		return []store.MessageEvent{queued, sent, accepted}
	case 1:
		queued.At = time.Time{} // the store's now
		return []store.MessageEvent{queued, sent}
	case 2:
		return []store.MessageEvent{sent, accepted}
	case 3:
		accepted.At = at.Add(time.Millisecond)
		return []store.MessageEvent{queued, sent, accepted}
	case 4:
		sent.DeviceID = "9"
		accepted.Detail = nil
		return []store.MessageEvent{queued, sent, accepted}
	case 5:
		accepted.MessageID = "m9"
		return []store.MessageEvent{queued, sent, accepted}
	case 6:
		queued.Detail = json.RawMessage(`{"reason":"x"}`)
		return []store.MessageEvent{queued, sent, accepted, accepted}
	case 7:
		return []store.MessageEvent{{At: at, UserID: user, MessageID: msg, DeviceID: "2", Type: store.EventFailed, Detail: json.RawMessage(`{"status":503}`)}, sent, accepted}
	default:
		return []store.MessageEvent{{UserID: user, Type: store.EventTaskFailed, Detail: json.RawMessage(`{"taskId":"t"}`)}, accepted}
	}
}

// eventLines writes each event but its Seq as one line.
func eventLines(events []store.MessageEvent) []string {
	lines := make([]string, len(events))
	for i, e := range events {
		lines[i] = fmt.Sprintf("%s %s %s %s %d %s", e.UserID[:4], e.MessageID, e.DeviceID, e.Type, e.At.UnixMilli(), e.Detail)
	}
	return lines
}

// countPerDay is what EventsPerDay answers for events.
func countPerDay(events []store.MessageEvent, since time.Time, types []string) []store.DayCount {
	perDay := map[store.DayCount]int{}
	for _, e := range events {
		if !e.At.Before(since) && slices.Contains(types, e.Type) {
			perDay[store.DayCount{Day: e.At.UTC().Truncate(24 * time.Hour), Type: e.Type}]++
		}
	}
	var counts []store.DayCount
	for c, n := range perDay {
		c.Count = n
		counts = append(counts, c)
	}
	slices.SortFunc(counts, func(a, b store.DayCount) int { return cmp.Or(a.Day.Compare(b.Day), cmp.Compare(a.Type, b.Type)) })
	return counts
}

// The cap counts rows by their Seqs: on SQLite, whose Seqs are dense, the
// newest MessageEventsMaxRows events are kept (a row whose first events
// are past the bound goes whole); on PostgreSQL, where every row takes
// three Seqs, the newest MessageEventsMaxRows rows.
func TestPruneCapCountsSharedRowsBySeq(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now, MessageEventsMaxRows: 4})
	ctx := t.Context()
	var all []store.MessageEvent
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		run := []store.MessageEvent{{At: clk.now, UserID: alice, MessageID: id, Type: store.EventQueued}}
		if id == "b" || id == "d" {
			run = append(run, store.MessageEvent{At: clk.now, UserID: alice, MessageID: id, Type: store.EventSent},
				store.MessageEvent{At: clk.now, UserID: alice, MessageID: id, DeviceID: "1", Type: store.EventAccepted})
		}
		if err := st.AppendMessageEvents(ctx, run...); err != nil {
			t.Fatal(err)
		}
		all = append(all, run...)
	}
	if _, err := st.Prune(ctx, clk.now, store.Retention{}); err != nil {
		t.Fatal(err)
	}
	left, err := st.MessageEventsAfter(ctx, 0, store.MaxMessageEventsPage)
	want := all[5:] // d's three and e
	if st.DialectName() == "postgresql" {
		want = all[1:] // b, c, d, e
	}
	if err != nil || !slices.Equal(eventLines(left), eventLines(want)) {
		t.Errorf("after the cap: %q, %v; want %q", eventLines(left), err, eventLines(want))
	}
}

// A row of a delivery is pruned for age once all its events are past the
// outbox's age: its queued event is recorded after the attempt.
func TestPruneByAgeKeepsADeliveryUntilItsLastEventAges(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now, OutboxMaxAge: time.Hour})
	ctx := t.Context()
	sentAt := clk.now.Add(-time.Minute)
	if err := st.AppendMessageEvents(ctx, store.MessageEvent{UserID: alice, MessageID: "m1", Type: store.EventQueued},
		store.MessageEvent{At: sentAt, UserID: alice, MessageID: "m1", Type: store.EventSent},
		store.MessageEvent{At: sentAt, UserID: alice, MessageID: "m1", DeviceID: "1", Type: store.EventAccepted}); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Hour - time.Second) // the attempt is past the age, the queued event not
	if _, err := st.Prune(ctx, clk.now, store.Retention{}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.MessageTimeline(ctx, alice, "m1"); err != nil || len(got) != 3 {
		t.Errorf("before the queued event ages the timeline is %q, %v; want all three", summarize(got), err)
	}
	clk.Add(2 * time.Second)
	if _, err := st.Prune(ctx, clk.now, store.Retention{}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.MessageTimeline(ctx, alice, "m1"); err != nil || len(got) != 0 {
		t.Errorf("once all aged the timeline is %q, %v; want none", summarize(got), err)
	}
}

// A copy to PostgreSQL keeps every event's Seq, and the events written
// after it take Seqs past the copied ones.
func TestEventsWrittenAfterACopyFollowTheCopiedSeqs(t *testing.T) {
	clk := newClock()
	ctx := t.Context()
	src := storetest.Open(t, store.Config{Path: filepath.Join(t.TempDir(), "amsg.db"), Now: clk.Now})
	sec := src.Secrets()
	keys := store.Config{Now: clk.Now, MasterKey: sec.MasterKey, VAPIDPublicKey: sec.VAPIDPublicKey, VAPIDPrivateKey: sec.VAPIDPrivateKey}
	keys.DatabaseURL = storetest.DatabaseURL(t)
	delivery := func(id string) []store.MessageEvent {
		return []store.MessageEvent{{UserID: alice, MessageID: id, Type: store.EventQueued}, {UserID: alice, MessageID: id, Type: store.EventSent},
			{UserID: alice, MessageID: id, DeviceID: "1", Type: store.EventAccepted}}
	}
	if err := src.AppendMessageEvents(ctx, delivery("m1")...); err != nil {
		t.Fatal(err)
	}
	dst := storetest.Open(t, keys)
	if _, err := src.CopyTo(ctx, dst); err != nil {
		t.Fatal(err)
	}
	copied, err := src.MessageEventsAfter(ctx, 0, store.MaxMessageEventsPage)
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.AppendMessageEvents(ctx, delivery("m2")...); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.RecordReceipts(ctx, []store.MessageEvent{{UserID: alice, MessageID: "m1", DeviceID: "1", Type: store.EventShown}}); err != nil {
		t.Fatal(err)
	}
	got, err := dst.MessageEventsAfter(ctx, 0, store.MaxMessageEventsPage)
	if err != nil || len(got) != len(copied)+4 || !reflect.DeepEqual(got[:len(copied)], copied) {
		t.Fatalf("events %+v, %v; want the copied %+v and four more", got, err, copied)
	}
	for j := len(copied); j < len(got); j++ {
		if got[j].Seq <= got[j-1].Seq {
			t.Errorf("event %d has seq %d after %d", j, got[j].Seq, got[j-1].Seq)
		}
	}
}
