package courier

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// A key nobody holds lets one holder in; the others enter once it has left
// (a burst to a cold push service opens one connection), and then as many
// at once as the limit allows.
func TestSlowLimiterLetsOneInUntilTheFirstLeaves(t *testing.T) {
	l := newSlowLimiter(4, time.Now)
	ctx := t.Context()
	if err := l.acquire(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	entered := make(chan error, 3)
	for range 3 {
		go func() { entered <- l.acquire(ctx, "o") }()
	}
	waiters := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.keys["o"].refs - 1
	}
	for waiters() < 3 {
		runtime.Gosched()
	}
	select {
	case err := <-entered:
		t.Fatalf("a second holder entered (%v) while the first was in", err)
	default:
	}
	l.release("o")
	for range 3 {
		if err := <-entered; err != nil {
			t.Fatal(err)
		}
	}
	// All three hold a slot together now; the key stays open.
	if got := len(l.keys["o"].ch); got != 3 {
		t.Errorf("%d holders after the first left, want 3", got)
	}
	for range 3 {
		l.release("o")
	}
	if len(l.keys) != 0 {
		t.Errorf("keys left after every holder left: %v", l.keys)
	}
}

// A waiter whose context ends leaves without a slot and without holding
// the key.
func TestSlowLimiterWaiterGivesUp(t *testing.T) {
	l := newSlowLimiter(4, time.Now)
	if err := l.acquire(t.Context(), "o"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := l.acquire(ctx, "o"); err == nil {
		t.Fatal("a waiter entered before the first holder left")
	}
	l.release("o")
	if len(l.keys) != 0 {
		t.Errorf("keys left: %v", l.keys)
	}
}

// A first holder that hangs does not hold the others back for good: the
// key opens by itself (after openAfter).
func TestSlowLimiterOpensWithoutTheFirstHolder(t *testing.T) {
	l := newSlowLimiter(4, time.Now)
	if err := l.acquire(t.Context(), "o"); err != nil {
		t.Fatal(err)
	}
	if err := l.acquire(t.Context(), "o"); err != nil {
		t.Fatal(err)
	}
	l.release("o")
	l.release("o")
	if len(l.keys) != 0 {
		t.Errorf("keys left: %v", l.keys)
	}
}

// A key whose last holder left less than warmFor ago opens at once (its
// connection is still there); one that has been quiet longer opens slowly
// again.
func TestSlowLimiterKeepsARecentKeyWarm(t *testing.T) {
	now := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	l := newSlowLimiter(4, func() time.Time { return now })
	opensAtOnce := func() bool {
		t.Helper()
		if err := l.acquire(t.Context(), "o"); err != nil {
			t.Fatal(err)
		}
		defer l.release("o")
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.keys["o"].opened
	}
	if opensAtOnce() {
		t.Error("a key never used opened at once")
	}
	now = now.Add(warmFor - time.Second)
	if !opensAtOnce() {
		t.Error("a key left a moment ago opened slowly")
	}
	now = now.Add(warmFor)
	if opensAtOnce() {
		t.Error("a key quiet for longer than warmFor opened at once")
	}
}

// Pushes to one push service share its origin's slots whatever their path,
// and another port or host is another origin.
func TestOriginOfAnEndpoint(t *testing.T) {
	for endpoint, want := range map[string]string{
		"https://fcm.googleapis.com/fcm/send/abc":   "https://fcm.googleapis.com",
		"https://fcm.googleapis.com/fcm/send/def":   "https://fcm.googleapis.com",
		"https://web.push.apple.com/QGuQyavX":       "https://web.push.apple.com",
		"http://127.0.0.1:8443/push/1?x=y":          "http://127.0.0.1:8443",
		"https://updates.push.services.mozilla.com": "https://updates.push.services.mozilla.com",
		"https://push.example.net?q#f":              "https://push.example.net",
		"https://[::1]:9/p":                         "https://[::1]:9",
		"push.example.net/no-scheme":                "",
		"":                                          "",
	} {
		if got := originOf(endpoint); got != want {
			t.Errorf("originOf(%q) = %q, want %q", endpoint, got, want)
		}
	}
}
