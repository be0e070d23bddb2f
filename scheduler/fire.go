package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"amsg/builders"
	"amsg/llm"
	"amsg/loop"
	"amsg/push"
	"amsg/push/courier"
	"amsg/push/errcode"
	"amsg/store"
)

// Ids of one occurrence: deterministic, so every retry of the occurrence
// sends the same messageIds and the service worker shows each push once,
// while the next occurrence of a recurring task gets new ones.
func sessionID(taskID int64, occurrence time.Time) string {
	return "sess_task_" + strconv.FormatInt(taskID, 10) + "@" + strconv.FormatInt(occurrence.UnixMilli(), 10)
}

func messageIDBase(taskID int64, occurrence time.Time) string {
	return "msg_task_" + strconv.FormatInt(taskID, 10) + "@" + strconv.FormatInt(occurrence.UnixMilli(), 10)
}

// burstPrefix starts the messageId of every push of one occurrence, and of
// no other push: the outbox finds a burst by it.
func burstPrefix(taskID int64, occurrence time.Time) string {
	return messageIDBase(taskID, occurrence) + "_"
}

// outgoing is one push of a burst.
type outgoing = courier.Outgoing

// fire delivers one occurrence of task: content (the stored message, or an
// LLM answer), then its pushes, reasoning first, paced, through one courier
// round. It returns how many content pushes the burst has, and the
// bookkeeping of its last push, which the task's completion writes
// (store.CompleteTask).
//
// A burst of LLM answers is recorded in the outbox before its first push
// leaves, and an attempt that finds the occurrence's burst recorded resends
// it rather than building it again: after a crash mid-burst, the sentences
// already shown stay the first answer's, under the same messageIds, and the
// LLM is not asked again. An attempt that push services failed before any
// of its burst was delivered discards it, so the retry starts afresh (with a
// new LLM answer). A stored message is built again on every attempt, the
// same pushes under the same ids, so its pushes are recorded with their
// delivery instead (courier.Round.Deliver); only a burst of several reads
// which of them an earlier attempt delivered, or finds it recorded whole
// because its task was edited meanwhile (CommitOccurrence).
func (s *Scheduler) fire(ctx context.Context, task store.Task, p Payload, rec Recurrence) (sent int, last push.Bookkeeping, err error) {
	var round *loop.Round // set when the occurrence called the LLM
	defer func() { s.recordRound(task, round, err) }()

	cr, err := s.openGuarded(ctx, task, &p) // quiet hours and the daily limit (quiet.go)
	switch {
	case err != nil:
		return 0, last, err
	case !cr.Reachable():
		// Before spending LLM tokens on a message nobody can receive.
		return 0, last, errSubscriptionMissing
	}

	burst, started, round, err := s.burst(ctx, cr, task, p, rec)
	if err != nil {
		return 0, last, err
	}
	defer func() {
		// Only a failure the push services reported proves the burst
		// reached nobody; an interrupted attempt (shutdown, a lost lease)
		// may have a push in flight, so its burst stays for the retry.
		if err != nil && !started && ctx.Err() == nil {
			s.discardBurst(cr, task)
		}
	}()
	paced := false
	for i, o := range burst {
		if o.Kind == push.KindContent {
			sent++
		}
		if o.Delivered {
			continue
		}
		if paced {
			if err := s.sleep(ctx, s.cfg.PushInterval); err != nil {
				return 0, push.Bookkeeping{}, err
			}
		}
		// A cancel stops the burst here: at most the push in flight when it
		// came goes out.
		if err := ctx.Err(); err != nil {
			return 0, push.Bookkeeping{}, err
		}
		withheld, held, err := s.send(ctx, cr, o, i == len(burst)-1)
		if err != nil {
			return 0, push.Bookkeeping{}, err
		}
		last = held
		started, paced = started || !withheld, !withheld
		switch {
		case round == nil:
		case o.Kind == push.KindReasoning:
			round.ReasoningPush = o.MessageID
		default:
			round.ContentPushes = append(round.ContentPushes, o.MessageID)
		}
	}
	return sent, last, nil
}

// burst returns the occurrence's pushes, whether an earlier attempt
// delivered any of them, and the LLM round to record when it called the
// LLM (set even when the call failed). Only a burst of several pushes, or
// an LLM answer, reads the outbox for what an earlier attempt recorded.
func (s *Scheduler) burst(ctx context.Context, cr *courier.Round, task store.Task, p Payload, rec Recurrence) (burst []outgoing, started bool, round *loop.Round, err error) {
	if !usesLLM(p) {
		if p.UserMessage == nil {
			return nil, false, nil, textError(errcode.NoContentSource.English())
		}
		if burst, err = s.build(task, p, rec, "", *p.UserMessage, true); err != nil || len(burst) == 1 {
			// A lone push an earlier attempt delivered goes again under its
			// id, which the service worker drops: no read needed.
			return burst, false, nil, err
		}
		recorded, started, err := cr.Recorded(ctx, burstPrefix(task.ID, task.NextSendAt))
		if err != nil {
			return nil, false, nil, err
		}
		if committed(recorded) {
			// Recorded whole by an edit made while it was being delivered
			// (CommitOccurrence): the text it started with goes on.
			return recorded, started, nil, nil
		}
		for _, r := range recorded {
			if i := slices.IndexFunc(burst, func(o outgoing) bool { return o.MessageID == r.MessageID }); i >= 0 && r.Delivered {
				burst[i].Delivered = true
			}
		}
		return burst, started, nil, nil
	}
	if burst, started, err = cr.Recorded(ctx, burstPrefix(task.ID, task.NextSendAt)); err != nil || burst != nil {
		return burst, started, nil, err
	}
	burst, round, err = s.newBurst(ctx, cr, task, p, rec)
	return burst, false, round, err
}

// newBurst asks the LLM for an occurrence's answer, makes its pushes and
// records them in the outbox before anything is sent. round is the LLM
// round to record, set even when the call failed.
func (s *Scheduler) newBurst(ctx context.Context, cr *courier.Round, task store.Task, p Payload, rec Recurrence) (burst []outgoing, round *loop.Round, err error) {
	if err := s.resolveCredentials(ctx, task.UserID, &p); err != nil {
		return nil, nil, err
	}
	resp, err := s.content(ctx, p)
	round = &loop.Round{Input: p.Messages, Prompt: deref(p.CompletePrompt), Response: resp.llm}
	if err != nil {
		return nil, round, err
	}
	if burst, err = s.build(task, p, rec, resp.reasoning, resp.text, false); err != nil {
		return nil, round, err
	}
	round.Reasoning, round.Text = resp.reasoning, resp.text
	messages := make([]push.OutboxMessage, len(burst))
	for i, o := range burst {
		messages[i] = o.OutboxMessage
		burst[i].Recorded = true
	}
	if err := cr.Record(ctx, messages); err != nil {
		return nil, round, err
	}
	return burst, round, nil
}

// discardBurst deletes the recorded pushes of an occurrence none of which
// was delivered, so its retry builds the burst afresh.
func (s *Scheduler) discardBurst(cr *courier.Round, task store.Task) {
	ctx, cancel := context.WithTimeout(context.Background(), bookkeepingTimeout)
	defer cancel()
	if err := cr.Discard(ctx, burstPrefix(task.ID, task.NextSendAt)); err != nil {
		s.log.Warn("scheduler: discarding an undelivered burst failed", "taskId", task.ID, "err", err)
	}
}

// recordRound writes an occurrence's LLM round into the session transcript
// (sess_task_<id>@<occurrence>), which GET /sessions/{id} reads: the prompt,
// the reasoning and reply with the ids of the pushes that went out, the
// usage, and why it failed. A retried occurrence adds a round to the same
// session. Best effort: the delivery stands either way.
func (s *Scheduler) recordRound(task store.Task, round *loop.Round, err error) {
	if round == nil || s.deps.Transcripts == nil {
		return
	}
	if err != nil {
		code := failure(err).code
		if round.Response == nil {
			code = errcode.LLMCallFailed.Code()
		}
		round.Error = &loop.RoundError{Code: code, Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), bookkeepingTimeout)
	defer cancel()
	if err := s.deps.Transcripts.Record(ctx, loop.UserOwner(task.UserID), sessionID(task.ID, task.NextSendAt), *round); err != nil {
		s.log.Warn("scheduler: recording the round in the transcript failed", "taskId", task.ID, "err", err)
	}
}

// contentResult is what an occurrence sends: the reasoning and the text,
// and the LLM's answer when one was asked.
type contentResult struct {
	reasoning, text string
	llm             *llm.Response
}

// usesLLM reports whether an occurrence's text is an LLM answer: prompted
// and auto tasks, and instant ones with an AI configuration; otherwise the
// stored userMessage is the text.
func usesLLM(p Payload) bool {
	return p.MessageType == push.TypePrompted || p.MessageType == push.TypeAuto ||
		(p.MessageType == push.TypeInstant && p.HasAIConfig())
}

// content makes one LLM call with the stored prompt. A failed call returns
// a result without an answer, so the round is recorded.
func (s *Scheduler) content(ctx context.Context, p Payload) (*contentResult, error) {
	req := llm.Request{
		APIURL:         deref(p.APIURL),
		APIKey:         deref(p.APIKey),
		Model:          deref(p.PrimaryModel),
		Messages:       p.Messages,
		Prompt:         deref(p.CompletePrompt),
		Temperature:    p.Temperature,
		MaxTokens:      deref(p.MaxTokens),
		ExtraBody:      p.LLMExtraBody,
		RequireContent: true,
	}
	// LLM calls have a pool of their own, so slow models never hold the
	// delivery slots fixed tasks need.
	select {
	case s.llmSlots <- struct{}{}:
	case <-ctx.Done():
		return &contentResult{}, ctx.Err()
	}
	resp, err := s.deps.LLM.Complete(ctx, req)
	<-s.llmSlots
	if err != nil {
		return &contentResult{}, err
	}
	reasoning, text := resp.Output()
	return &contentResult{reasoning: reasoning, text: text, llm: resp}, nil
}

// build makes the pushes of one occurrence: the reasoning push, then one
// content push per segment of text. stored says text is the task's own
// (not an LLM answer), whose segments a recurring task keeps.
func (s *Scheduler) build(task store.Task, p Payload, rec Recurrence, reasoning, text string, stored bool) ([]outgoing, error) {
	segments, err := s.segments(task, p, rec, text, stored)
	if err != nil {
		return nil, err
	}

	occurrence := task.NextSendAt
	base := messageIDBase(task.ID, occurrence)
	avatar := json.RawMessage("null")
	if p.AvatarURL != nil {
		avatar, _ = json.Marshal(*p.AvatarURL)
	}
	common := builders.Common{
		MessageType:    p.MessageType,
		Source:         p.MessageType.Source(),
		SessionID:      sessionID(task.ID, occurrence),
		MessageSubtype: p.MessageSubtype,
		Metadata:       p.Metadata,
		Notification:   p.notification,
		TaskIdentity: push.TaskIdentity{
			TaskID:         push.Some(push.NumericTaskID(task.ID)),
			TaskUUID:       push.Some(task.UUID),
			RecurrenceType: push.Some(rec.Type),
			OccurrenceMs:   push.Some(occurrence.UnixMilli()),
		},
	}
	b := builders.Builder{Now: s.now, PageURL: s.cfg.PageURL}
	title := builders.FromContactTitle(p.ContactName)
	var burst []outgoing
	add := func(pu push.Push) error {
		m, err := store.NewOutboxMessage(pu)
		if err != nil {
			return err
		}
		burst = append(burst, outgoing{OutboxMessage: m, Kind: pu.Kind()})
		return nil
	}
	if reasoning != "" {
		c := common
		c.MessageID = base + "_reasoning"
		rp, _, err := b.BuildReasoningPush(builders.ReasoningArgs{Common: c, ReasoningContent: reasoning,
			Title: title, ContactName: p.ContactName, AvatarURL: avatar})
		if err == nil {
			err = add(rp)
		}
		if err != nil {
			return nil, fmt.Errorf("build reasoning push: %w", err)
		}
	}
	for i, seg := range segments {
		c := common
		c.MessageID = base + "_" + strconv.Itoa(i)
		cp, _, err := b.BuildContentPush(builders.ContentArgs{Common: c, Message: seg, Title: title,
			ContactName: p.ContactName, AvatarURL: avatar, MessageIndex: i + 1, TotalMessages: len(segments)})
		if err == nil {
			err = add(cp)
		}
		if err != nil {
			return nil, fmt.Errorf("build content push: %w", err)
		}
	}
	return burst, nil
}

// send delivers one push of the round; the last one's bookkeeping comes
// back for the task's completion to write. It succeeds when at least one
// device took the push, or the push policy kept it off Web Push (withheld):
// retrying would only repeat it on the others.
func (s *Scheduler) send(ctx context.Context, cr *courier.Round, o outgoing, last bool) (withheld bool, held push.Bookkeeping, err error) {
	var res courier.Result
	if last {
		res, held, err = cr.DeliverLast(ctx, o)
	} else {
		res, err = cr.Deliver(ctx, o)
	}
	switch {
	case errors.Is(err, courier.ErrNoRecipients):
		return false, held, errSubscriptionMissing
	case errors.Is(err, push.ErrPayloadTooLarge):
		return false, held, fmt.Errorf("%w: %w", errPayloadTooLarge, err)
	case err != nil:
		return false, held, err
	}
	if res.Withheld || res.Delivered() > 0 {
		return res.Withheld, held, nil
	}
	gone, status := 0, 0
	var reasons []string
	for _, d := range res.Devices {
		if d.Outcome == push.OutcomeGone {
			gone++
		}
		if d.Err != nil {
			reasons = append(reasons, d.Err.Error())
		}
		status = cmp.Or(status, d.Status)
	}
	if gone == len(res.Devices) {
		// The push service dropped every subscription; the devices are
		// deleted, so retrying cannot help until the page registers again.
		return false, held, pushStatusError{status, errSubscriptionMissing}
	}
	return false, held, pushStatusError{status, fmt.Errorf("%w on %d device(s): %s", errPushSendFailed, len(res.Devices), strings.Join(reasons, "; "))}
}
