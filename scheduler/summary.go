package scheduler

import (
	"time"

	"amsg/push"
)

// resultKind is what became of one claimed occurrence.
type resultKind int

const (
	resultDeleted           resultKind = iota // one-off delivered and deleted
	resultAdvanced                            // recurring delivered and advanced
	resultStale                               // stale guard: expired or fast-forwarded
	resultBackoff                             // failed, retry later
	resultSkipped                             // recurring, failed for good this occurrence
	resultFailed                              // one-off, failed for good
	resultUpdateFailed                        // the failure could not be recorded
	resultStaleUpdateFailed                   // the stale guard could not be recorded
	resultCleanupFailed                       // delivered, but the completion could not be written
	resultLeaseLost                           // another claimer or the owner took the task over
	resultReleased                            // not delivered: the scheduler is stopping
	resultCancelled                           // stopped mid-delivery: its task was cancelled
	resultDeferred                            // not delivered: waits for the end of quiet hours
)

// result is one claimed occurrence's outcome.
type result struct {
	taskID      int64
	kind        resultKind
	reason      string // the failure, unsanitized
	permanent   bool
	retryCount  int
	next        time.Time // next occurrence, or next retry for a backoff
	skipped     int
	sent        int
	late        time.Duration // delivery start after the nominal time
	updateError string
}

// Summary is the standard's tick summary, the data of POST
// /send-notifications.
type Summary struct {
	TotalTasks    int            `json:"totalTasks"`
	SuccessCount  int            `json:"successCount"`
	FailedCount   int            `json:"failedCount"`
	ProcessedAt   string         `json:"processedAt"`
	ExecutionTime int64          `json:"executionTime"` // milliseconds
	Details       SummaryDetails `json:"details"`
}

// SummaryDetails break a tick down. ClaimSkippedTasks and
// SerializeSkippedTasks are always 0: claiming is atomic here, and amsg has
// no serializeBy hook.
type SummaryDetails struct {
	ClaimSkippedTasks     int          `json:"claimSkippedTasks"`
	SerializeSkippedTasks int          `json:"serializeSkippedTasks"`
	DeletedOnceOffTasks   int          `json:"deletedOnceOffTasks"`
	UpdatedRecurringTasks int          `json:"updatedRecurringTasks"`
	StaleTasks            []StaleTask  `json:"staleTasks"`
	FailedTasks           []FailedTask `json:"failedTasks"`
	// CancelledTasks are the occurrences a cancel or a supersede stopped
	// while they were being delivered (upstream's cancelledTasks).
	CancelledTasks []CancelledTask `json:"cancelledTasks"`
}

// CancelledTask is an occurrence stopped by its task's cancel.
type CancelledTask struct {
	TaskID int64  `json:"taskId"`
	Reason string `json:"reason"`
	Status string `json:"status"` // cancelled_mid_delivery
}

// StaleTask is an occurrence the stale guard dropped.
type StaleTask struct {
	TaskID       int64  `json:"taskId"`
	Reason       string `json:"reason"`
	Action       string `json:"action"` // expired or fast_forwarded
	NextSendAt   string `json:"nextSendAt,omitempty"`
	SkippedCount int    `json:"skippedCount"`
}

// FailedTask is one of the standard's failure entries; which members are
// set depends on Status.
type FailedTask struct {
	TaskID           int64  `json:"taskId"`
	Reason           string `json:"reason"`
	RetryCount       *int   `json:"retryCount,omitempty"`
	NextRetryAt      string `json:"nextRetryAt,omitempty"`
	Status           string `json:"status,omitempty"`
	NextSendAt       string `json:"nextSendAt,omitempty"`
	Permanent        bool   `json:"permanent,omitempty"`
	UpdateError      string `json:"updateError,omitempty"`
	MessageDelivered bool   `json:"messageDelivered,omitempty"`
}

// summarize builds the tick summary. Reasons are sanitized: the summary
// reaches whoever may trigger a tick, and covers every user's tasks.
func summarize(start, end time.Time, results []result) Summary {
	s := Summary{
		TotalTasks:    len(results),
		ProcessedAt:   push.FormatTimestamp(end),
		ExecutionTime: end.Sub(start).Milliseconds(),
		Details:       SummaryDetails{StaleTasks: []StaleTask{}, FailedTasks: []FailedTask{}, CancelledTasks: []CancelledTask{}},
	}
	d := &s.Details
	for _, r := range results {
		f := FailedTask{TaskID: r.taskID, Reason: Sanitize(r.reason), Permanent: r.permanent}
		switch r.kind {
		case resultDeleted:
			s.SuccessCount++
			d.DeletedOnceOffTasks++
		case resultAdvanced:
			s.SuccessCount++
			d.UpdatedRecurringTasks++
		case resultLeaseLost, resultReleased, resultDeferred:
			// Someone else finishes these, or a later tick.
		case resultCancelled:
			d.CancelledTasks = append(d.CancelledTasks, CancelledTask{TaskID: r.taskID, Reason: "cancelled",
				Status: StatusCancelledMidDelivery})
		case resultStale:
			st := StaleTask{TaskID: r.taskID, Reason: "stale", Action: "expired", SkippedCount: r.skipped}
			if !r.next.IsZero() {
				st.Action, st.NextSendAt = "fast_forwarded", push.FormatTimestamp(r.next)
			}
			d.StaleTasks = append(d.StaleTasks, st)
		case resultBackoff:
			f.RetryCount, f.NextRetryAt = &r.retryCount, push.FormatTimestamp(r.next)
		case resultSkipped:
			f.RetryCount, f.Status, f.NextSendAt = &r.retryCount, "occurrence_skipped", push.FormatTimestamp(r.next)
		case resultFailed:
			f.RetryCount, f.Status = &r.retryCount, "permanently_failed"
		case resultUpdateFailed:
			f.Status, f.UpdateError = "retry_update_failed", Sanitize(r.updateError)
		case resultStaleUpdateFailed:
			f.Status, f.UpdateError = "stale_update_failed", Sanitize(r.updateError)
		case resultCleanupFailed:
			f.Status, f.MessageDelivered = "post_send_cleanup_failed", true
		}
		switch r.kind {
		case resultBackoff, resultSkipped, resultFailed, resultUpdateFailed, resultStaleUpdateFailed, resultCleanupFailed:
			s.FailedCount++
			d.FailedTasks = append(d.FailedTasks, f)
		}
	}
	return s
}

// logResult logs what the background ticker did with one occurrence. A
// delivered one is a debug line: a backlog delivers thousands a second, and
// amsg_push_deliveries_total counts them; failures are warnings.
func (s *Scheduler) logResult(r result) {
	attrs := []any{"taskId", r.taskID}
	switch r.kind {
	case resultDeleted, resultAdvanced:
		attrs = append(attrs, "pushes", r.sent, "lateMs", r.late.Milliseconds())
		if !r.next.IsZero() {
			attrs = append(attrs, "next", push.FormatTimestamp(r.next))
		}
		s.log.Debug("scheduler: task delivered", attrs...)
	case resultStale:
		s.log.Warn("scheduler: stale occurrence skipped", append(attrs, "skipped", r.skipped)...)
	case resultBackoff:
		s.log.Warn("scheduler: delivery failed; will retry", append(attrs, "retry", r.retryCount,
			"retryAt", push.FormatTimestamp(r.next), "reason", Sanitize(r.reason))...)
	case resultSkipped, resultFailed:
		s.log.Warn("scheduler: delivery failed for good", append(attrs, "permanent", r.permanent, "reason", Sanitize(r.reason))...)
	case resultUpdateFailed, resultStaleUpdateFailed, resultCleanupFailed:
		s.log.Error("scheduler: recording a task's outcome failed", append(attrs, "reason", Sanitize(r.reason),
			"err", r.updateError)...)
	case resultLeaseLost:
		s.log.Info("scheduler: task taken over while delivering", attrs...)
	case resultReleased:
		s.log.Info("scheduler: lease released at shutdown", attrs...)
	case resultCancelled:
		s.log.Info("scheduler: task cancelled while being delivered", attrs...)
	case resultDeferred:
		s.log.Info("scheduler: occurrence waits for the end of quiet hours", append(attrs, "until", push.FormatTimestamp(r.next))...)
	}
}
