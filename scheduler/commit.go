package scheduler

import (
	"context"
	"fmt"
	"slices"

	"amsg/push"
	"amsg/push/courier"
	"amsg/store"
)

// CommitOccurrence keeps an edit of t from changing an occurrence of t that
// has begun: one being delivered, or waiting to retry after some of its
// pushes went out. A stored message of several segments is recorded in the
// outbox push by push, with each delivery, and a retry rebuilds the pushes
// still to send from the task's text: once the text is edited, they would
// be the new text's. So before it stores an edit of such a task, the API
// calls this, which records the occurrence's pushes missing from the
// outbox, built from t's stored (unedited) payload; a retry then finds the
// burst recorded whole and resends it (burst). LLM answers are recorded
// before they are sent, and a lone push is resent under its id, which the
// service worker drops: those need nothing. Edits of an occurrence under
// way are rare, so the delivery itself writes nothing more for them.
func (s *Scheduler) CommitOccurrence(ctx context.Context, t store.Task) error {
	p, err := TaskPayload(t)
	if err != nil || usesLLM(p) || p.UserMessage == nil {
		return nil // nothing that an edit could change will be sent
	}
	rec, err := p.Recurrence()
	if err != nil {
		return nil
	}
	burst, err := s.build(t, p, rec, "", *p.UserMessage, true)
	if err != nil || len(burst) == 1 {
		return err
	}
	recorded, err := s.deps.Store.BurstOutbox(ctx, t.UserID, burstPrefix(t.ID, t.NextSendAt))
	if err != nil {
		return fmt.Errorf("commit occurrence: %w", err)
	}
	if len(recorded) == 0 && !t.LeaseUntil.After(s.now()) {
		return nil // nothing went out and nothing is going: the edit applies whole
	}
	var missing []push.OutboxMessage
	for _, o := range burst {
		if !slices.ContainsFunc(recorded, func(e push.OutboxEntry) bool { return e.MessageID == o.MessageID }) {
			missing = append(missing, o.OutboxMessage)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := s.deps.Store.AppendOutbox(ctx, t.UserID, missing); err != nil {
		return fmt.Errorf("commit occurrence: %w", err)
	}
	return nil
}

// committed reports whether a stored message's recorded burst is whole,
// as CommitOccurrence leaves it: one row per segment.
func committed(recorded []courier.Outgoing) bool {
	return len(recorded) > 0 && len(recorded) == recorded[0].TotalMessages
}
