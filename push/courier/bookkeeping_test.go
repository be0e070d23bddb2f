package courier_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/courier"
)

// A failed write is retried with growing waits and every failure is logged
// with its text (issue 22: the log said "err":""); the bound ends it.
func TestRetryWrite(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	var waits []time.Duration
	sleep := func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	tries := 0
	err := courier.RetryWrite(t.Context(), time.Minute, sleep, log, slog.Int64("taskId", 7), "recording", func(context.Context) error {
		if tries++; tries < 4 {
			return errors.New("disk I/O error")
		}
		return nil
	})
	if err != nil || tries != 4 {
		t.Fatalf("err %v after %d tries", err, tries)
	}
	if want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}; !slices.Equal(waits, want) {
		t.Errorf("waits %v, want %v", waits, want)
	}
	if n := strings.Count(logs.String(), `"taskId":7,"try":`); n != 3 {
		t.Errorf("%d failures logged with the task written:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), `"err":"disk I/O error"`); n != 3 {
		t.Errorf("%d failures logged with their text:\n%s", n, logs.String())
	}
	// A closed store is never retried: the process is stopping.
	waits, tries = nil, 0
	closed := fmt.Errorf("store: %w", push.ErrStoreClosed)
	err = courier.RetryWrite(t.Context(), time.Minute, sleep, log, slog.Int64("taskId", 7), "recording", func(context.Context) error { tries++; return closed })
	if !errors.Is(err, push.ErrStoreClosed) || tries != 1 || len(waits) != 0 {
		t.Errorf("a closed store: err %v after %d tries and %d waits", err, tries, len(waits))
	}
	// Past the bound the last error is returned.
	giveUp := func(context.Context, time.Duration) error { return context.DeadlineExceeded }
	err = courier.RetryWrite(t.Context(), time.Minute, giveUp, log, slog.Int64("taskId", 7), "recording", func(context.Context) error { return errors.New("still down") })
	if err == nil || err.Error() != "still down" {
		t.Errorf("err %v, want the last write's", err)
	}
}

// Every try is bounded by the sooner of the call's bound and a try's
// timeout, the first one too, and runs on although the caller's context
// has ended: the push it records went out.
func TestRetryWriteBoundsEveryTryAndOutlivesItsCaller(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	log := slog.New(slog.DiscardHandler)
	noWait := func(context.Context, time.Duration) error { return nil }
	for _, bound := range []time.Duration{time.Second, time.Hour} {
		var deadlines []time.Time
		before := time.Now()
		err := courier.RetryWrite(ctx, bound, noWait, log, slog.Int64("taskId", 7), "recording", func(ctx context.Context) error {
			if err := ctx.Err(); err != nil {
				t.Fatalf("try %d runs with its context ended: %v", len(deadlines)+1, err)
			}
			dl, ok := ctx.Deadline()
			if !ok {
				t.Fatalf("try %d has no deadline", len(deadlines)+1)
			}
			if deadlines = append(deadlines, dl); len(deadlines) < 3 {
				return errors.New("busy")
			}
			return nil
		})
		after := time.Now()
		if err != nil || len(deadlines) != 3 {
			t.Fatalf("bound %s: err %v after %d tries", bound, err, len(deadlines))
		}
		limit := min(bound, 10*time.Second) // the try's timeout, courier.bookkeepingTimeout
		if dl := deadlines[0]; dl.Before(before.Add(limit)) {
			t.Errorf("bound %s: the first try ends %s after the call began, want %s", bound, dl.Sub(before), limit)
		}
		for i, dl := range deadlines {
			if dl.After(after.Add(limit)) {
				t.Errorf("bound %s: try %d ends %s after the call began, want at most %s", bound, i+1, dl.Sub(before), limit)
			}
		}
	}
}
