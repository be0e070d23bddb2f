package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"amsg/push"
	"amsg/push/courier"
	"amsg/store"
)

// The guards that protect a person from a proactive bot, read from the
// user's preferences (store.Preferences) when an occurrence fires:
//
//   - Quiet hours: an occurrence due inside them is not sent; it moves to
//     the end of the window in the user's zone (store.DeferTask) and fires
//     then. A retry whose burst the person has partly received finishes
//     it instead. The gate runs before the LLM call of a prompted or auto task,
//     so quiet hours spend no tokens, and the answer is the one the model
//     gives when the person is awake.
//   - The release: a deferred occurrence's pushes carry the notification
//     tag of their conversation (ConversationTag), so the messages held
//     through a night arrive as at most one notification per conversation,
//     each later one replacing the earlier; every push is in the outbox.
//   - The daily limit: beyond dailyLimit proactive occurrences in the
//     user's local day, the round records its pushes in the outbox, where
//     the page reads them, and sends nothing by Web Push.
//
// A task of priority "critical" passes both, and so does an instant task:
// its user waits for it in the request that created it.

// Priorities of a task or an operator send.
const (
	PriorityNormal   = "normal"
	PriorityCritical = "critical"
)

// Critical reports whether the occurrence passes quiet hours and the daily
// limit.
func (p Payload) Critical() bool { return p.Priority == PriorityCritical }

// guarded reports whether the user's guards apply to the occurrence: a
// proactive one that is not critical.
func (p Payload) guarded() bool { return !p.Critical() && p.MessageType != push.TypeInstant }

// Zone is the time zone of p, UTC when it names none (or one that no longer
// loads).
func Zone(p store.Preferences) *time.Location {
	if p.TimeZone == "" {
		return time.UTC
	}
	loc, err := LoadZone(p.TimeZone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// QuietUntil reports whether at is inside p's quiet hours and, if so, the
// instant they end, in p's zone: the window's end on the wall clock of that
// day, so a window over a change of clocks lasts an hour more or less. An
// end that falls in a gap of the clocks (02:30 on the night they spring
// forward) is the instant the wall clock passes it.
func QuietUntil(p store.Preferences, at time.Time) (time.Time, bool) {
	q := p.QuietHours
	if q == nil {
		return time.Time{}, false
	}
	local := at.In(Zone(p))
	minute := local.Hour()*60 + local.Minute()
	y, m, d := local.Date()
	switch {
	case q.Start < q.End && minute >= q.Start && minute < q.End:
	case q.Start > q.End && minute >= q.Start:
		d++ // ends tomorrow
	case q.Start > q.End && minute < q.End:
	default:
		return time.Time{}, false
	}
	until := time.Date(y, m, d, q.End/60, q.End%60, 0, 0, local.Location())
	if !until.After(at) {
		// The end was in a gap Go resolved backwards: the first instant
		// whose wall clock is past it.
		until = at.Add(time.Minute).Truncate(time.Minute)
	}
	return until, true
}

// LocalDay is at's date in p's zone, YYYY-MM-DD: the day of the daily
// limit.
func LocalDay(p store.Preferences, at time.Time) string {
	return at.In(Zone(p)).Format(time.DateOnly)
}

// ConversationTag is the notification tag of the messages of one contact
// that quiet hours held: their release shows one notification per
// conversation.
func ConversationTag(contactName string) string { return "amsg-quiet-" + contactName }

// OccurrenceMessageID is the messageId of the first content push of a
// fixed task's occurrence without reasoning.
func OccurrenceMessageID(taskID int64, occurrence time.Time) string {
	return messageIDBase(taskID, occurrence) + "_0"
}

// deferral is an occurrence quiet hours hold until their end.
type deferral struct{ until time.Time }

func (d deferral) Error() string {
	return "quiet hours: deferred until " + push.FormatTimestamp(d.until)
}

// deferredUntil reports whether err is a deferral, and until when.
func deferredUntil(err error) (time.Time, bool) {
	var d deferral
	if errors.As(err, &d) {
		return d.until, true
	}
	return time.Time{}, false
}

// openGuarded opens an occurrence's courier round through the user's
// guards (see above): a deferral error inside quiet hours, a round that
// sends nothing by Web Push past the daily limit, and on the release of a
// deferred occurrence p's notification set to the conversation's tag.
//
// A user without preferences costs one indexed read; only a user with quiet
// hours costs the read of whether the occurrence is a release (one whose
// user cleared quiet hours since it was held arrives under its own tag).
func (s *Scheduler) openGuarded(ctx context.Context, task store.Task, p *Payload) (*courier.Round, error) {
	to := courier.Recipients{UserID: task.UserID}
	if p.guarded() {
		prefs, err := s.deps.Store.Preferences(ctx, task.UserID)
		if err != nil {
			return nil, err
		}
		now := s.now()
		if prefs.QuietHours != nil {
			if until, quiet := QuietUntil(prefs, now); quiet {
				if started, err := s.burstStarted(ctx, task); err != nil || !started {
					return nil, cmp.Or(err, error(deferral{until}))
				}
				// A retry finishes the burst it started, whose first pushes
				// the person has: held, it would come back as a new one.
			}
			if err := s.tagRelease(ctx, task, p); err != nil {
				return nil, err
			}
		}
		if limit := prefs.DailyLimit; limit != nil {
			within, err := s.deps.Store.TakeDailySlot(ctx, task.UserID, LocalDay(prefs, now), burstPrefix(task.ID, task.NextSendAt), *limit)
			if err != nil {
				return nil, err
			}
			to.OutboxOnly = !within
		}
	}
	return s.deps.Courier.Open(ctx, to, p.MessageType.Source())
}

// burstStarted reports whether an earlier attempt of a retried occurrence
// delivered some of its pushes. A first attempt has none: no read.
func (s *Scheduler) burstStarted(ctx context.Context, task store.Task) (bool, error) {
	if task.RetryCount == 0 {
		return false, nil
	}
	recorded, err := s.deps.Store.BurstOutbox(ctx, task.UserID, burstPrefix(task.ID, task.NextSendAt))
	return slices.ContainsFunc(recorded, func(e push.OutboxEntry) bool { return !e.DeliveredAt.IsZero() }), err
}

// tagRelease gives the pushes of a deferred occurrence's release their
// conversation's notification tag.
func (s *Scheduler) tagRelease(ctx context.Context, task store.Task, p *Payload) error {
	released, err := s.deps.Store.IsDeferred(ctx, task)
	if released {
		p.notification = &push.Notification{Tag: push.Some(ConversationTag(p.ContactName))}
	}
	return err
}

// deferred records an occurrence quiet hours hold: it moves to until,
// unclaimed, as a new occurrence.
func (s *Scheduler) deferred(t store.Task, l store.Lease, until time.Time) result {
	ctx, cancel := context.WithTimeout(context.Background(), bookkeepingTimeout)
	defer cancel()
	r := result{taskID: t.ID, kind: resultDeferred, next: until}
	if err := s.deps.Store.DeferTask(ctx, l, until); err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			return r
		}
		return result{taskID: t.ID, kind: resultUpdateFailed, reason: fmt.Sprintf("defer for quiet hours: %v", err), updateError: err.Error()}
	}
	s.tellDeferred(ctx, t, until)
	return r
}

// tellDeferred records the deferral in the timeline of the occurrence's
// first push, which the release sends (DeferredEvent). A failure is
// logged: the deferral itself is written.
func (s *Scheduler) tellDeferred(ctx context.Context, t store.Task, until time.Time) {
	if err := s.deps.Store.AppendMessageEvents(ctx, DeferredEvent(t.UserID, t.ID, t.UUID, until)); err != nil {
		s.log.WarnContext(ctx, "scheduler: could not record a deferral in the message's timeline", "taskId", t.ID, "err", err.Error())
	}
}

// DeferredEvent is the deferred event of task taskID (uuid taskUUID) of
// userID held by quiet hours until until, in the timeline of the message
// its release sends first (OccurrenceMessageID): what an app that asks
// after that message learns.
func DeferredEvent(userID string, taskID int64, taskUUID string, until time.Time) store.MessageEvent {
	detail, _ := json.Marshal(struct {
		Reason   string `json:"reason"`
		Until    string `json:"until"`
		TaskUUID string `json:"taskUuid"`
	}{"quiet_hours", push.FormatTimestamp(until), taskUUID}) // cannot fail: strings
	return store.MessageEvent{UserID: userID, MessageID: OccurrenceMessageID(taskID, until), Type: store.EventDeferred, Detail: detail}
}
