package store_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// benchLog fills a store with a day of delivery log, n attempts spread
// evenly over it, one in ten failed, appended oldest first as a server
// appends them, and returns the store and its path.
func benchLog(b *testing.B, n int) (*store.Store, string) {
	b.Helper()
	clk := newClock()
	path := filepath.Join(b.TempDir(), "amsg.db")
	st := storetest.Open(b, store.Config{Path: path, Now: clk.Now, DeliveryLogMaxRows: 10 * n})
	const batch = 10_000
	for i := 0; i < n; i += batch {
		attempts := make([]push.Attempt, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			outcome, status := push.OutcomeDelivered, 201
			if j%10 == 0 {
				outcome, status = push.OutcomeRetry, 429
			}
			attempts = append(attempts, push.Attempt{At: clk.Now().Add(-time.Duration(n-1-j) * 24 * time.Hour / time.Duration(n)),
				MessageID: fmt.Sprintf("m%d", j), UserID: fmt.Sprintf("user-%d", j%1000), DeviceID: int64(j % 1000),
				PushHost: "fcm.googleapis.com", Try: 1, Status: status, Outcome: outcome})
		}
		if err := st.RecordDeliveries(b.Context(), push.Bookkeeping{Attempts: attempts}); err != nil {
			b.Fatal(err)
		}
	}
	return st, path
}

// BenchmarkAttemptsPerMinute is the operator page's chart query over a day
// of 200 000 attempts (about 140 a minute).
func BenchmarkAttemptsPerMinute(b *testing.B) {
	st, _ := benchLog(b, 200_000)
	since := newClock().Now().Add(-24 * time.Hour)
	b.ResetTimer()
	for b.Loop() {
		counts, err := st.AttemptsPerMinute(b.Context(), since)
		if err != nil || len(counts) < 1440 {
			b.Fatalf("%d counts, %v", len(counts), err)
		}
	}
}

// BenchmarkFailedAttempts reads the newest 100 failed attempts of that day.
func BenchmarkFailedAttempts(b *testing.B) {
	st, _ := benchLog(b, 200_000)
	since := newClock().Now().Add(-24 * time.Hour)
	b.ResetTimer()
	for b.Loop() {
		if a, err := st.FailedAttempts(b.Context(), since, 100); err != nil || len(a) != 100 {
			b.Fatalf("%d attempts, %v", len(a), err)
		}
	}
}

// BenchmarkBackup copies a database holding that day of log with VACUUM
// INTO.
func BenchmarkBackup(b *testing.B) {
	_, path := benchLog(b, 200_000)
	dir := b.TempDir()
	i := 0
	b.ResetTimer()
	for b.Loop() {
		i++
		if err := store.Backup(b.Context(), store.Config{Path: path}, filepath.Join(dir, fmt.Sprintf("copy-%d.db", i))); err != nil {
			b.Fatal(err)
		}
	}
}
