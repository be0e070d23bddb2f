package api

import (
	"cmp"
	"context"
	"errors"
	"time"

	"amsg/push"
	"amsg/push/courier"
	"amsg/scheduler"
	"amsg/store"
)

// The user's guards on the operator's messages (POST /admin/send, and each
// user of a broadcast), as the scheduler applies them to tasks
// (scheduler/quiet.go): inside the user's quiet hours the message becomes a
// one-off fixed task due when they end, which GET /messages lists with
// deferredUntil and whose release shares the conversation's notification
// tag; beyond the daily limit it is recorded in the outbox and not sent by
// Web Push. A message of priority "critical" passes both.

// guardAdminMessage applies the user's guards to m, whose push is p, before
// it is sent. handled reports that it dealt with the message (deferred it
// to the end of quiet hours, or recorded it in the outbox only) and res is
// the answer; otherwise the message goes as usual.
func (s *Server) guardAdminMessage(ctx context.Context, userID string, m adminMessage, p *push.ContentPush) (res adminSendResult, handled bool, err error) {
	if m.Priority == scheduler.PriorityCritical {
		return res, false, nil
	}
	prefs, err := s.deps.Store.Preferences(ctx, userID)
	if err != nil {
		return res, false, err
	}
	now := s.now()
	if until, quiet := scheduler.QuietUntil(prefs, now); quiet {
		res, err = s.deferAdminMessage(ctx, userID, m, until)
		return res, true, err
	}
	if prefs.DailyLimit == nil {
		return res, false, nil
	}
	within, err := s.deps.Store.TakeDailySlot(ctx, userID, scheduler.LocalDay(prefs, now), p.MessageID, *prefs.DailyLimit)
	if err != nil || within {
		return res, false, err
	}
	res = adminSendResult{MessageID: p.MessageID, Devices: []deviceOutcome{}, OutboxOnly: true}
	return res, true, s.adminRecordOnly(ctx, userID, p)
}

// deferAdminMessage stores m as a one-off fixed task of userID due at until,
// the end of the user's quiet hours. The message keeps its text,
// contactName, messageSubtype and metadata; its title becomes a task's
// (from contactName).
func (s *Server) deferAdminMessage(ctx context.Context, userID string, m adminMessage, until time.Time) (adminSendResult, error) {
	p := scheduler.Payload{
		ContactName:    cmp.Or(m.ContactName, m.Title, "amsg"),
		MessageType:    push.TypeFixed,
		MessageSubtype: cmp.Or(m.MessageSubtype, push.DefaultSubtype),
		UserMessage:    &m.Message,
		FirstSendTime:  push.FormatTimestamp(until),
		RecurrenceType: push.RecurrenceNone,
		Metadata:       m.Metadata,
	}
	raw, err := p.Encode()
	if err != nil {
		return adminSendResult{}, err
	}
	task, _, err := s.deps.Store.InsertTask(ctx, store.NewTask{UserID: userID, UUID: push.NewUUID(), MessageType: push.TypeFixed,
		NextSendAt: until, Payload: raw, Deferred: true})
	if err != nil {
		return adminSendResult{}, err
	}
	if err := s.deps.Store.AppendMessageEvents(ctx, scheduler.DeferredEvent(userID, task.ID, task.UUID, until)); err != nil {
		s.log.WarnContext(ctx, "could not record a deferral in the message's timeline", "taskUuid", task.UUID, "err", err.Error())
	}
	return adminSendResult{MessageID: scheduler.OccurrenceMessageID(task.ID, until), Devices: []deviceOutcome{},
		DeferredUntil: push.FormatTimestamp(until), TaskUUID: task.UUID}, nil
}

// adminRecordOnly records p in userID's outbox without sending it: the
// user's daily limit is spent.
func (s *Server) adminRecordOnly(ctx context.Context, userID string, p push.Push) error {
	r, err := s.deps.Courier.Open(ctx, courier.Recipients{UserID: userID, OutboxOnly: true}, push.SourceInstant)
	if err != nil {
		return err
	}
	if _, err := r.Push(ctx, p); err != nil && !errors.Is(err, courier.ErrNoRecipients) {
		return &courier.UndeliveredError{Err: err}
	}
	return nil
}
