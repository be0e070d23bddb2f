package courier

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"amsg/push"
)

// KeepBound is how long Keep goes on retrying a push's bookkeeping: a
// database restart takes seconds, and a write given up leaves the push
// unrecorded (issue 22: a failed write was tried once, then the task's
// lease ran out and the occurrence went out again 90 s later).
const KeepBound = 30 * time.Second

// Backoff of RetryWrite: the first wait, doubled up to the last.
const (
	retryFirstWait = 100 * time.Millisecond
	retryMaxWait   = 5 * time.Second
)

// RetryWrite runs write until it succeeds or bound has passed, each try
// within bookkeepingTimeout, waiting between tries with sleep (growing from
// 100 ms to 5 s); every failure is logged with its text and about (the
// task or push written: an attribute, not a Logger.With, which would format
// it on every write of every push). It is for the writes that record a push
// that already went out, where failing is worse than waiting: write returns
// nil for an outcome that makes the write moot (a lost lease). It returns
// the last error.
//
// The first try, which nearly every write needs alone, gets one context
// ending at the sooner of its two bounds; the bound's own context (and
// timer) is made only when a try fails: a scheduled push's completion
// comes here once, and two contexts with their timers were two thirds of
// this call's CPU (BenchmarkRetryWriteFirstTry).
func RetryWrite(ctx context.Context, bound time.Duration, sleep func(context.Context, time.Duration) error,
	log *slog.Logger, about slog.Attr, what string, write func(context.Context) error) error {
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	deadline := time.Now().Add(bound)
	tctx, tcancel := context.WithTimeout(ctx, min(bound, bookkeepingTimeout))
	err := write(tctx)
	tcancel()
	if err == nil || errors.Is(err, push.ErrStoreClosed) {
		return err // a closed store: the process is stopping, no retry can succeed
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	wait := retryFirstWait
	for try := 1; ; try++ {
		log.LogAttrs(ctx, slog.LevelWarn, "courier: "+what+" failed; retrying", about, slog.Int("try", try), slog.String("err", err.Error()))
		if sleep(ctx, wait) != nil {
			return err
		}
		wait = min(2*wait, retryMaxWait)
		tctx, tcancel := context.WithTimeout(ctx, bookkeepingTimeout)
		err = write(tctx)
		tcancel()
		switch {
		case errors.Is(err, push.ErrStoreClosed):
			return err
		case err == nil:
			log.LogAttrs(ctx, slog.LevelInfo, "courier: "+what+" written after retries", about, slog.Int("tries", try+1))
			return nil
		}
	}
}
