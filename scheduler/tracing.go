package scheduler

import (
	"context"
	"time"

	"amsg/push"
	"amsg/push/tracing"
	"amsg/store"
)

// claim is when the claim that handed an occurrence over ran, and how many
// occurrences it took: the first span of the occurrence's trace. Zero while
// tracing is off.
type claim struct {
	start, end time.Time
	batch      int
}

// claimBegins is the wall time a claim begins at, or zero while tracing is
// off (no clock is read).
func claimBegins() time.Time {
	if !tracing.Enabled() {
		return time.Time{}
	}
	return time.Now()
}

// claimEnded is the claim that began at began and took batch occurrences.
func claimEnded(began time.Time, batch int) claim {
	if began.IsZero() {
		return claim{}
	}
	return claim{start: began, end: time.Now(), batch: batch}
}

// traceOccurrence starts the trace of one scheduled occurrence (push/tracing):
// its root span, begun when its claim began, and the claim as its first
// child. What the occurrence does next (the LLM call, the pushes, the
// completion's write) is inside the root.
func traceOccurrence(ctx context.Context, t store.Task, c claim) (context.Context, tracing.Span) {
	ctx, span := tracing.Root(ctx, "scheduler.occurrence", c.start)
	if !span.Recording() {
		return ctx, span
	}
	span.Int("amsg.task.id", t.ID)
	span.Str("amsg.occurrence", push.FormatTimestamp(t.NextSendAt))
	span.Int("amsg.task.retry_count", int64(t.RetryCount))
	_, claimed := tracing.StartAt(ctx, "scheduler.claim", c.start)
	claimed.Int("amsg.claim.batch", int64(c.batch))
	claimed.EndAt(c.end)
	return ctx, span
}

// traceResult ends an occurrence's root span with what became of it.
func traceResult(span tracing.Span, r result) {
	if !span.Recording() {
		return
	}
	name, failed := resultName(r.kind)
	span.Str("amsg.occurrence.result", name)
	span.Int("amsg.occurrence.sent", int64(r.sent))
	if failed {
		span.Fail(name)
	}
	span.End()
}

// resultName names a result kind for a trace, and says whether it is a
// failure.
func resultName(k resultKind) (name string, failed bool) {
	switch k {
	case resultDeleted, resultAdvanced:
		return "delivered", false
	case resultStale:
		return "stale", false
	case resultBackoff:
		return "backoff", true
	case resultSkipped:
		return "skipped", true
	case resultFailed:
		return "failed", true
	case resultUpdateFailed, resultStaleUpdateFailed, resultCleanupFailed:
		return "bookkeeping_failed", true
	case resultLeaseLost:
		return "lease_lost", false
	case resultReleased:
		return "released", false
	case resultCancelled:
		return "cancelled", false
	case resultDeferred:
		return "deferred", false
	}
	return "other", false
}
