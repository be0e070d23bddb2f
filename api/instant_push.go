package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"amsg/push"
	"amsg/push/webpush"
	"amsg/store"
)

// deliveryError is a push that reached none of its recipients.
type deliveryError struct {
	status int // the last status a push service answered; 0 if none did
	err    error
}

func (e *deliveryError) Error() string { return "Web Push delivery failed: " + e.err.Error() }
func (e *deliveryError) Unwrap() error { return e.err }

// deliverPush sends p to the user's devices and to the request's
// subscription at once, as an instant push (TTL 60 s, urgency high), and
// fails only when no recipient took it. Attempts to the request's
// subscription go to the delivery log like the devices' do. A user's pushes
// are recorded in the outbox before they go and marked delivered after, so
// a page that missed one catches up; the outbox is best effort and never
// fails a delivery.
func (s *Server) deliverPush(ctx context.Context, to recipients, p push.Push) error {
	entry, err := store.NewOutboxMessage(p)
	if err != nil {
		return err
	}
	msg := webpush.Message{ID: entry.MessageID, Kind: p.Kind(), Payload: entry.Payload, Source: push.SourceInstant}
	if to.userID != "" {
		if err := s.deps.Store.AppendOutbox(ctx, to.userID, []store.OutboxMessage{entry}); err != nil {
			s.log.WarnContext(ctx, "could not record a push in the outbox", "messageId", msg.ID, "err", err)
		}
	}
	var (
		wg              sync.WaitGroup
		devices         webpush.Result
		single          webpush.Delivery
		devErr, sendErr error
	)
	if to.userID != "" {
		wg.Go(func() { devices, devErr = s.deps.Dispatcher.Dispatch(ctx, to.userID, msg) })
	}
	if to.sub != nil {
		wg.Go(func() { single, sendErr = s.deps.Dispatcher.Sender.Send(ctx, *to.sub, msg) })
	}
	wg.Wait()
	if len(single.Attempts) > 0 {
		for i := range single.Attempts {
			single.Attempts[i].UserID = to.userID
		}
		if err := s.deps.Store.RecordAttempts(context.WithoutCancel(ctx), single.Attempts); err != nil {
			s.log.ErrorContext(ctx, "could not record push attempts", "messageId", msg.ID, "err", err)
		}
	}

	results := []webpush.Delivery{single}
	for _, d := range devices.Devices {
		results = append(results, d.Delivery)
	}
	for _, d := range results {
		if d.Outcome != push.OutcomeDelivered {
			continue
		}
		if to.userID != "" {
			if err := s.deps.Store.MarkOutboxDelivered(context.WithoutCancel(ctx), to.userID, []string{msg.ID}); err != nil {
				s.log.WarnContext(ctx, "could not mark a push delivered in the outbox", "messageId", msg.ID, "err", err)
			}
		}
		return nil
	}
	return deliveryFailure(results, sendErr, devErr)
}

// deliveryFailure says why no recipient took a push: a push that could not
// be sent at all, else what a push service answered, else why no answer
// came, else that there was nobody to send to.
func deliveryFailure(results []webpush.Delivery, errs ...error) *deliveryError {
	for _, err := range errs {
		if err != nil && !errors.Is(err, webpush.ErrNoDevices) {
			return &deliveryError{err: err}
		}
	}
	for _, d := range results {
		switch {
		case d.Status != 0:
			return &deliveryError{status: d.Status, err: fmt.Errorf("%d %s", d.Status, http.StatusText(d.Status))}
		case d.Err != nil:
			return &deliveryError{err: d.Err}
		}
	}
	return &deliveryError{err: webpush.ErrNoDevices}
}

// pushQueue delivers one request's pushes in order on a goroutine of its
// own: the SSE transport's backups, and its only delivery once the client
// has gone.
type pushQueue struct {
	mu     sync.Mutex
	items  []push.Push
	closed bool
	wake   chan struct{}
	done   chan struct{}
}

func (s *Server) newPushQueue(ctx context.Context, to recipients) *pushQueue {
	q := &pushQueue{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run(func(p push.Push) {
		if err := s.deliverPush(ctx, to, p); err != nil {
			s.log.WarnContext(ctx, "backup push failed", "messageId", p.CommonFields().MessageID, "err", err)
		}
	})
	return q
}

func (q *pushQueue) run(send func(push.Push)) {
	defer close(q.done)
	for {
		q.mu.Lock()
		if len(q.items) == 0 {
			closed := q.closed
			q.mu.Unlock()
			if closed {
				return
			}
			<-q.wake
			continue
		}
		p := q.items[0]
		q.items = q.items[1:]
		q.mu.Unlock()
		send(p)
	}
}

func (q *pushQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// add queues p behind the pushes already queued.
func (q *pushQueue) add(p push.Push) {
	q.mu.Lock()
	q.items = append(q.items, p)
	q.mu.Unlock()
	q.signal()
}

// wait returns once every queued push has been attempted.
func (q *pushQueue) wait() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
	<-q.done
}
