package webpush

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"1", time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"0", 0, true},
		{"86400", 24 * time.Hour, true},
		{"86401", maxRetryAfter, true},
		{"99999999999999999999999", maxRetryAfter, true},
		{"Sun, 01 Mar 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Sunday, 01-Mar-26 12:01:00 GMT", time.Minute, true},
		{"Sun Mar  1 12:00:05 2026", 5 * time.Second, true},
		{"Sun, 01 Mar 2026 11:00:00 GMT", 0, true}, // in the past
		{"Tue, 01 Mar 2039 12:00:00 GMT", maxRetryAfter, true},
		{"", 0, false},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"+5", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parseRetryAfter(%q) = %s, %v; want %s, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestBackoff(t *testing.T) {
	none := func(time.Duration) time.Duration { return 0 }
	all := func(n time.Duration) time.Duration { return n - 1 }
	base, limit := 500*time.Millisecond, 8*time.Second
	for try, want := range map[int]time.Duration{1: 250 * time.Millisecond, 2: 500 * time.Millisecond, 3: time.Second, 5: 4 * time.Second, 6: 4 * time.Second, 100: 4 * time.Second} {
		if got := backoff(try, base, limit, none); got != want {
			t.Errorf("backoff(%d) without jitter = %s, want %s", try, got, want)
		}
		if got := backoff(try, base, limit, all); got != 2*want-1 {
			t.Errorf("backoff(%d) with full jitter = %s, want %s", try, got, 2*want-1)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "120", "Sun, 01 Mar 2026 12:00:30 GMT", "Sunday, 01-Mar-26 12:01:00 GMT", "Sun Mar  1 12:00:05 2026", "", "-1", "9999999999999999999999"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := parseRetryAfter(v, now)
		if d < 0 || d > maxRetryAfter {
			t.Fatalf("parseRetryAfter(%q) = %s, outside 0..%s", v, d, maxRetryAfter)
		}
		if !ok && d != 0 {
			t.Fatalf("parseRetryAfter(%q) = %s but not ok", v, d)
		}
		if _, err := http.ParseTime(v); err == nil && !ok {
			t.Fatalf("an HTTP-date was refused: %q", v)
		}
	})
}
