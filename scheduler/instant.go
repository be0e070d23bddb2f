package scheduler

import (
	"context"
	"time"

	"amsg/push"
	"amsg/push/errcode"
	"amsg/store"
)

// InstantResult is an instant task delivered inside its schedule request.
type InstantResult struct {
	MessagesSent int
	RetriesUsed  int
}

// InstantError is why an instant task was not delivered: the details of the
// standard's 500 MESSAGE_SEND_FAILED. DeliverInstant's errors are all
// InstantErrors; callers find one with errors.As.
type InstantError struct {
	Code             string `json:"code"`
	Message          string `json:"message"`
	RetriesAttempted *int   `json:"retriesAttempted,omitempty"`
	Permanent        bool   `json:"permanent,omitempty"`
	// PushStatus and LLMStatus are what the push service or the LLM
	// answered, when one did.
	PushStatus int `json:"pushStatus,omitempty"`
	LLMStatus  int `json:"llmStatus,omitempty"`
	Details    any `json:"details,omitempty"`
}

func (e *InstantError) Error() string { return e.Code + ": " + e.Message }

// LeaseEnd is the lease an instant task is inserted with
// (store.NewTask.LeaseUntil), so the ticker leaves it to DeliverInstant.
func (s *Scheduler) LeaseEnd() time.Time { return s.now().Add(s.cfg.LeaseTTL) }

// DeliverInstant delivers an instant task that was inserted leased, through
// the same pipeline as the ticker, making up to InstantAttempts attempts.
// Delivered, the task is deleted; failed, it is marked failed with its
// last error. The pushes carry source "instant" and the push service's
// short instant TTL. A failure is an *InstantError.
func (s *Scheduler) DeliverInstant(ctx context.Context, t store.Task) (InstantResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.track(t.ID, cancel)
	defer s.untrack(t.ID)
	held := s.hold(t.Lease(), cancel)
	p, err := TaskPayload(t)
	var rec Recurrence
	if err == nil {
		rec, err = p.Recurrence()
	}
	var sent, attempts int
	var last push.Bookkeeping
	if err == nil {
		for attempts = 1; ; attempts++ {
			sent, last, err = s.fire(ctx, t, p, rec)
			if err == nil || failure(err).permanent || attempts == s.cfg.InstantAttempts ||
				s.sleep(ctx, time.Duration(attempts)*s.cfg.InstantBackoff) != nil {
				break
			}
		}
	}
	retries := max(attempts-1, 0)
	lease, lost := held.end()
	if lost || (err != nil && cancelled(ctx)) {
		s.deps.Courier.Keep(ctx, last)
		return InstantResult{}, &InstantError{Code: errcode.TaskNotFound.Code(), Message: errcode.TaskNotFound.Chinese()}
	}
	if err != nil {
		le := newLastError(s.now(), t.NextSendAt, err.Error())
		le.judge(failure(err))
		bctx, bcancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
		defer bcancel()
		if ferr := s.deps.Store.FailTask(bctx, lease, retries, le.json()); ferr != nil {
			s.log.Error("scheduler: recording a failed instant task failed", "taskId", t.ID, "err", ferr)
		}
		return InstantResult{}, &InstantError{Code: errcode.ProcessingError.Code(), Message: err.Error(), RetriesAttempted: &retries,
			Permanent: le.Permanent, PushStatus: le.PushStatus, LLMStatus: le.LLMStatus}
	}
	if err := s.complete(ctx, lease, time.Time{}, last, true); err != nil {
		return InstantResult{}, &InstantError{Code: errcode.PostSendCleanupFailed.Code(), Message: errcode.PostSendCleanupFailed.Chinese(),
			Details: map[string]string{"error": err.Error()}}
	}
	return InstantResult{MessagesSent: sent, RetriesUsed: retries}, nil
}
