package courier

import (
	"testing"
	"time"
)

// A key warmed (a connection to its push service opened ahead) opens at
// once for its first holders; without warm, it opens slowly.
func TestAWarmedKeyOpensAtOnce(t *testing.T) {
	now := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	l := newSlowLimiter(4, func() time.Time { return now })
	opened := func(key string) bool {
		t.Helper()
		if err := l.acquire(t.Context(), key); err != nil {
			t.Fatal(err)
		}
		defer l.release(key)
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.keys[key].opened
	}
	l.warm("https://push.example")
	if !opened("https://push.example") {
		t.Error("a warmed key opened slowly")
	}
	if opened("https://other.example") {
		t.Error("a key never warmed nor used opened at once")
	}
	fast := newLimiter(4)
	fast.warm("https://push.example") // a limiter that opens at once keeps no warm keys
	if fast.left != nil {
		t.Errorf("warm remembered keys in a limiter that opens at once: %v", fast.left)
	}
}
