package scheduler

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"amsg/builders"
	"amsg/loop"
	"amsg/push"
	"amsg/push/webpush"
	"amsg/store"
)

// Error codes of failed deliveries, as the standard names them; a push no
// device took is loop.CodePushSendFailed, as on the instant path.
const (
	CodeSubscriptionMissing = "PUSH_SUBSCRIPTION_MISSING"
	CodePayloadTooLarge     = "PUSH_PAYLOAD_TOO_LARGE"
)

// subscriptionMissingText is the standard's reason for a user without a
// push subscription.
const subscriptionMissingText = "PUSH_SUBSCRIPTION_MISSING: 该用户还没有登记推送订阅（PUT /push-subscription）"

// FireError is a failed delivery of one occurrence. Permanent failures are
// not retried: a one-off task fails, a recurring one skips the occurrence.
type FireError struct {
	Code      string // a standard code, or "" for an ordinary failure
	Permanent bool
	Err       error
}

func (e *FireError) Error() string { return e.Err.Error() }
func (e *FireError) Unwrap() error { return e.Err }

// textError is an error whose text is the standard's wording, capitals
// included.
type textError string

func (e textError) Error() string { return string(e) }

func permanent(code string, err error) *FireError {
	return &FireError{Code: code, Permanent: true, Err: err}
}

// fireErr views any error as a *FireError.
func fireErr(err error) *FireError {
	var fe *FireError
	if errors.As(err, &fe) {
		return fe
	}
	return &FireError{Err: err}
}

// Ids of one occurrence: deterministic, so every retry of the occurrence
// sends the same messageIds and the service worker shows each push once,
// while the next occurrence of a recurring task gets new ones.
func sessionID(taskID int64, occurrence time.Time) string {
	return "sess_task_" + strconv.FormatInt(taskID, 10) + "@" + strconv.FormatInt(occurrence.UnixMilli(), 10)
}

func messageIDBase(taskID int64, occurrence time.Time) string {
	return "msg_task_" + strconv.FormatInt(taskID, 10) + "@" + strconv.FormatInt(occurrence.UnixMilli(), 10)
}

// outgoing is one built push of a burst, as the outbox records it.
type outgoing struct {
	store.OutboxMessage
	kind      push.Kind
	delivered bool // an earlier attempt delivered it
}

// fire delivers one occurrence of task: content (the stored message, or an
// LLM answer), then its pushes, reasoning first, paced. It returns how many
// content pushes went out. An occurrence that already reached the user in
// part (a retry after a failure mid-burst, or after a crash) finishes the
// burst it started, from the outbox: a new LLM answer would mix with the
// sentences already shown under the same messageIds.
func (s *Scheduler) fire(ctx context.Context, task store.Task, p Payload, rec Recurrence) (sent int, err error) {
	var round *loop.Round // set when the occurrence called the LLM
	var pushed []string
	defer func() { s.recordRound(task, round, err) }()

	burst := s.startedBurst(ctx, task)
	if burst == nil {
		if burst, round, err = s.newBurst(ctx, task, p, rec); err != nil {
			return 0, err
		}
	}
	defer func() { s.markDelivered(task, pushed) }()
	source := p.MessageType.Source()
	paced := false
	for _, o := range burst {
		if o.kind == push.KindContent {
			sent++
		}
		if o.delivered {
			continue
		}
		if paced {
			if err := s.sleep(ctx, s.cfg.PushInterval); err != nil {
				return 0, err
			}
		}
		paced = true
		if err := s.send(ctx, task.UserID, source, o); err != nil {
			return 0, err
		}
		pushed = append(pushed, o.MessageID)
		switch {
		case round == nil:
		case o.kind == push.KindReasoning:
			round.ReasoningPush = o.MessageID
		default:
			round.ContentPushes = append(round.ContentPushes, o.MessageID)
		}
	}
	return sent, nil
}

// newBurst makes an occurrence's pushes (calling the LLM when the task asks
// for it) and records them in the outbox before anything is sent, for
// clients that were offline; the outbox is best effort and never fails a
// delivery. round is the LLM round to record, set even when the call failed.
func (s *Scheduler) newBurst(ctx context.Context, task store.Task, p Payload, rec Recurrence) (burst []outgoing, round *loop.Round, err error) {
	resp, err := s.content(ctx, task, p)
	if resp == nil && err == nil {
		resp = &contentResult{text: *p.UserMessage}
	} else if resp != nil {
		round = &loop.Round{Input: p.Messages, Prompt: deref(p.CompletePrompt), Response: resp.llm}
	}
	if err != nil {
		return nil, round, err
	}
	if burst, err = s.build(task, p, rec, resp.reasoning, resp.text); err != nil {
		return nil, round, err
	}
	if round != nil {
		round.Reasoning, round.Text = resp.reasoning, resp.text
	}
	messages := make([]store.OutboxMessage, len(burst))
	for i, o := range burst {
		messages[i] = o.OutboxMessage
	}
	if err := s.deps.Store.AppendOutbox(ctx, task.UserID, messages); err != nil {
		s.log.Warn("scheduler: outbox append failed; sending anyway", "task_id", task.ID, "err", err)
	}
	return burst, round, nil
}

// startedBurst returns the burst an earlier attempt of the occurrence
// recorded in the outbox, when some of it was delivered; nil otherwise (an
// attempt that reached nobody starts afresh, with an edited message or a
// new LLM answer).
func (s *Scheduler) startedBurst(ctx context.Context, task store.Task) []outgoing {
	entries, err := s.deps.Store.SessionOutbox(ctx, task.UserID, sessionID(task.ID, task.NextSendAt))
	if err != nil {
		s.log.Warn("scheduler: reading the occurrence's outbox failed; building it afresh", "task_id", task.ID, "err", err)
		return nil
	}
	burst := make([]outgoing, 0, len(entries))
	started := false
	for _, e := range entries {
		p, err := push.Decode(e.Payload)
		if err != nil {
			s.log.Warn("scheduler: an outbox row does not decode; building the occurrence afresh", "task_id", task.ID, "err", err)
			return nil
		}
		delivered := !e.DeliveredAt.IsZero()
		started = started || delivered
		burst = append(burst, outgoing{OutboxMessage: e.OutboxMessage, kind: p.Kind(), delivered: delivered})
	}
	if !started {
		return nil
	}
	return burst
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
		code := fireErr(err).Code
		if round.Response == nil {
			code = loop.CodeLLMCallFailed
		}
		round.Error = &loop.RoundError{Code: cmp.Or(code, loop.CodePushSendFailed), Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), bookkeepingTimeout)
	defer cancel()
	if err := s.deps.Transcripts.Record(ctx, loop.UserOwner(task.UserID), sessionID(task.ID, task.NextSendAt), *round); err != nil {
		s.log.Warn("scheduler: recording the round in the transcript failed", "task_id", task.ID, "err", err)
	}
}

// markDelivered records in the outbox the pushes that went out, also those
// of a burst cut short.
func (s *Scheduler) markDelivered(task store.Task, ids []string) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), bookkeepingTimeout)
	defer cancel()
	if err := s.deps.Store.MarkOutboxDelivered(ctx, task.UserID, ids); err != nil {
		s.log.Warn("scheduler: marking outbox rows delivered failed", "task_id", task.ID, "err", err)
	}
}

// contentResult is what an occurrence sends: the reasoning and the text,
// and the LLM's answer when one was asked.
type contentResult struct {
	reasoning, text string
	llm             *loop.Response
}

// content returns what an occurrence sends. For fixed tasks (and instant
// ones without an LLM) it returns nil: the stored userMessage is the text.
// Otherwise it makes one LLM call with the stored prompt; a failed call
// returns a non-nil result without an answer, so the round is recorded.
func (s *Scheduler) content(ctx context.Context, task store.Task, p Payload) (*contentResult, error) {
	useLLM := p.MessageType == push.TypePrompted || p.MessageType == push.TypeAuto ||
		(p.MessageType == push.TypeInstant && p.HasAIConfig())
	if !useLLM {
		if p.UserMessage == nil {
			return nil, textError("Invalid instant message: no content source available")
		}
		return nil, nil
	}
	// Check for a device before spending LLM tokens on a message nobody
	// can receive; without an LLM call, sending finds out by itself.
	devices, err := s.deps.Store.Devices(ctx, task.UserID)
	if err != nil {
		return nil, fmt.Errorf("list push subscriptions: %w", err)
	}
	if len(devices) == 0 {
		return nil, permanent(CodeSubscriptionMissing, textError(subscriptionMissingText))
	}
	req := loop.Request{
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
	resp, err := s.deps.LLM.Complete(ctx, req)
	if err != nil {
		return &contentResult{}, err
	}
	reasoning, text := resp.Output()
	return &contentResult{reasoning: reasoning, text: text, llm: resp}, nil
}

// build makes the pushes of one occurrence: the reasoning push, then one
// content push per segment of text.
func (s *Scheduler) build(task store.Task, p Payload, rec Recurrence, reasoning, text string) ([]outgoing, error) {
	splitter, err := loop.ParseSplitPattern(p.SplitPattern)
	if err != nil {
		return nil, fmt.Errorf("splitPattern: %w", err)
	}
	segments, err := splitter.Split(text)
	if errors.Is(err, loop.ErrSplitTimeout) || errors.Is(err, loop.ErrSplitInputTooLarge) {
		s.log.Warn("scheduler: splitPattern gave up; sending the text as one message", "task_id", task.ID, "err", err)
		segments, err = []string{text}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("splitPattern: %w", err)
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
		TaskIdentity: push.TaskIdentity{
			TaskID:         push.Some(push.NumericTaskID(task.ID)),
			TaskUUID:       push.Some(task.UUID),
			RecurrenceType: push.Some(rec.Type),
			OccurrenceMs:   push.Some(occurrence.UnixMilli()),
		},
	}
	b := builders.Builder{Now: s.now, PageURL: s.cfg.PageURL}
	title := "来自 " + p.ContactName
	var burst []outgoing
	add := func(pu push.Push) error {
		m, err := store.NewOutboxMessage(pu)
		if err != nil {
			return err
		}
		burst = append(burst, outgoing{OutboxMessage: m, kind: pu.Kind()})
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

// send delivers one push to every device of the user. It succeeds when at
// least one device took it: retrying would only repeat it on the others.
func (s *Scheduler) send(ctx context.Context, userID string, source push.Source, o outgoing) error {
	res, err := s.deps.Pusher.Dispatch(ctx, userID, webpush.Message{ID: o.MessageID, Kind: o.kind, Payload: o.Payload, Source: source})
	switch {
	case errors.Is(err, webpush.ErrNoDevices):
		return permanent(CodeSubscriptionMissing, textError(subscriptionMissingText))
	case errors.Is(err, push.ErrPayloadTooLarge):
		return permanent(CodePayloadTooLarge, fmt.Errorf("%s: %w", CodePayloadTooLarge, err))
	case err != nil:
		return err
	}
	if res.Delivered() > 0 {
		return nil
	}
	gone := 0
	var reasons []string
	for _, d := range res.Devices {
		if d.Outcome == push.OutcomeGone {
			gone++
		}
		if d.Err != nil {
			reasons = append(reasons, d.Err.Error())
		}
	}
	if gone == len(res.Devices) {
		// The push service dropped every subscription; the devices are
		// deleted, so retrying cannot help until the page registers again.
		return permanent(CodeSubscriptionMissing, textError(subscriptionMissingText))
	}
	return &FireError{Code: loop.CodePushSendFailed, Err: textError(fmt.Sprintf("Web Push delivery failed on %d device(s): %s",
		len(res.Devices), strings.Join(reasons, "; ")))}
}

// sleep waits d or until ctx ends.
func defaultSleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
