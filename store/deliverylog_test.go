package store_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

func TestRecordAndListAttempts(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	at := time.Date(2026, 3, 1, 7, 59, 0, 123_000_000, time.UTC)
	want := []push.Attempt{
		{At: at, MessageID: "m1", UserID: alice, DeviceID: 1, PushHost: "fcm.googleapis.com", Try: 1, Status: 429,
			Outcome: push.OutcomeRetry, Latency: 87 * time.Millisecond, Error: "429 Too Many Requests"},
		{At: at, MessageID: "m1", UserID: alice, DeviceID: 2, PushHost: "updates.push.services.mozilla.com", Try: 1, Status: 410,
			Outcome: push.OutcomeGone, Latency: 12 * time.Millisecond, Error: "410 Gone"},
		{At: at.Add(time.Second), MessageID: "m1", UserID: alice, DeviceID: 1, PushHost: "fcm.googleapis.com", Try: 2, Status: 201,
			Outcome: push.OutcomeDelivered, Latency: 40 * time.Millisecond},
	}
	if err := st.RecordDeliveries(ctx, push.Bookkeeping{Attempts: want[:2]}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordDeliveries(ctx, push.Bookkeeping{Attempts: []push.Attempt{{MessageID: "m2", UserID: bob, DeviceID: 3, Try: 1, Outcome: push.OutcomeFailed, Error: "dial tcp: timeout"}}}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordDeliveries(ctx, push.Bookkeeping{Attempts: want[2:]}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordDeliveries(ctx, push.Bookkeeping{Attempts: nil}); err != nil {
		t.Fatalf("recording no attempts: %v", err)
	}

	got, err := st.Attempts(ctx, "m1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("Attempts(m1) = %d attempts, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("attempt %d\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	m2, err := st.Attempts(ctx, "m2")
	if err != nil || len(m2) != 1 || !m2[0].At.Equal(clk.now) || m2[0].Status != 0 || m2[0].Error != "dial tcp: timeout" {
		t.Errorf("Attempts(m2) = %+v, %v; want one attempt stamped now with no status", m2, err)
	}
	if none, err := st.Attempts(ctx, "unknown"); err != nil || len(none) != 0 {
		t.Errorf("Attempts(unknown) = %+v, %v; want none", none, err)
	}
}

func TestRecordedAttemptsBoundErrorText(t *testing.T) {
	st := storetest.New(t)
	long := strings.Repeat("é", 5000) // 2 bytes each: a cut at 1024 bytes could split one
	if err := st.RecordDeliveries(t.Context(), push.Bookkeeping{Attempts: []push.Attempt{{MessageID: "m", Error: "x" + long}}}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Attempts(t.Context(), "m")
	if err != nil || len(got) != 1 {
		t.Fatalf("Attempts = %+v, %v", got, err)
	}
	if e := got[0].Error; len(e) > 1024 || len(e) < 1000 || !utf8.ValidString(e) || !strings.HasPrefix(e, "xé") {
		t.Errorf("stored error is %d bytes (valid UTF-8: %v), want a valid prefix of at most 1024", len(e), utf8.ValidString(e))
	}
}

func TestPruneDeliveryLogByAge(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now, DeliveryLogMaxAge: 24 * time.Hour})
	ctx := t.Context()
	var attempts []push.Attempt
	for _, age := range []time.Duration{72 * time.Hour, 25 * time.Hour, 24*time.Hour + time.Millisecond, 23 * time.Hour, time.Minute} {
		attempts = append(attempts, push.Attempt{At: clk.now.Add(-age), MessageID: "m", Outcome: push.OutcomeDelivered, Error: age.String()})
	}
	if err := st.RecordDeliveries(ctx, push.Bookkeeping{Attempts: attempts}); err != nil {
		t.Fatal(err)
	}
	n, err := st.PruneDeliveryLog(ctx)
	if err != nil || n != 3 {
		t.Fatalf("PruneDeliveryLog = %d, %v; want 3 deleted", n, err)
	}
	left, err := st.Attempts(ctx, "m")
	if err != nil || len(left) != 2 || left[0].Error != "23h0m0s" || left[1].Error != "1m0s" {
		t.Fatalf("left after pruning: %+v, %v; want the 23h and 1m attempts", left, err)
	}
}

func TestPruneDeliveryLogByRows(t *testing.T) {
	st := storetest.Open(t, store.Config{DeliveryLogMaxRows: 5})
	ctx := t.Context()
	for i := range 8 {
		if err := st.RecordDeliveries(ctx, push.Bookkeeping{Attempts: []push.Attempt{{MessageID: "m", Try: i + 1, Outcome: push.OutcomeRetry}}}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := st.PruneDeliveryLog(ctx)
	if err != nil || n != 3 {
		t.Fatalf("PruneDeliveryLog = %d, %v; want 3 deleted", n, err)
	}
	left, err := st.Attempts(ctx, "m")
	if err != nil || len(left) != 5 || left[0].Try != 4 || left[4].Try != 8 {
		t.Fatalf("left after pruning: %+v, %v; want tries 4 to 8", left, err)
	}
	if n, err := st.PruneDeliveryLog(ctx); err != nil || n != 0 {
		t.Fatalf("second prune = %d, %v; want nothing to delete", n, err)
	}
}

// A push's attempt writes its row and no index entry on SQLite
// (appendOrderedSchema: its reads by time seek a rowid range) and, on
// PostgreSQL, an entry of the block-range index by time, which its prune
// and the operator's chart read: no read looks attempts up by message, so
// no index by message is written (attemptsUnindexedSchema).
func TestTheDeliveryLogIsIndexedByTimeAlone(t *testing.T) {
	st := storetest.New(t)
	report, err := st.Schema(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var indexed []string
	for _, ix := range report.Indexes {
		if ix.Table == "delivery_log" && ix.Origin != "pk" {
			indexed = append(indexed, strings.Join(ix.Columns, ","))
		}
	}
	want := map[string]string{"sqlite": "", "postgresql": "at"}[st.DialectName()]
	if strings.Join(indexed, " ") != want {
		t.Errorf("delivery_log's indexes beside its key on %s are on %q, want %q", st.DialectName(), indexed, want)
	}
}
