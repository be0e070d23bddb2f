package api

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"amsg/push"
	"amsg/push/courier"
)

// deliveryError is a push that reached none of its recipients; the JSON
// transport finds it with errors.As to answer with the push service's
// status.
type deliveryError struct {
	status int // the last status a push service answered; 0 if none did
	err    error
}

func (e *deliveryError) Error() string { return "Web Push delivery failed: " + e.err.Error() }
func (e *deliveryError) Unwrap() error { return e.err }

// deliverPush sends p through the request's courier round (the user's
// devices and the request's own subscription at once, as an instant push:
// TTL 60 s, urgency high), and fails only when no recipient took it. The
// courier records the push in the user's outbox before it goes and marks it
// delivered after, so a page that missed one catches up. A push the push
// policy keeps off Web Push counts as delivered: it is in the outbox. So does
// a push the round's stream delivered (streamed), which under the visible
// policy skips the streaming device.
func (s *Server) deliverPush(ctx context.Context, round *courier.Round, p push.Push, streamed bool) error {
	send := round.Push
	if streamed {
		send = round.PushStreamed
	}
	res, err := send(ctx, p)
	if err != nil {
		return &deliveryError{err: err}
	}
	if res.Withheld || res.Streamed || res.Delivered() > 0 {
		return nil
	}
	return deliveryFailure(res)
}

// deliveryFailure says why no recipient took a push, as a *deliveryError:
// what a push service answered, else why no answer came, else that there
// was nobody to send to.
func deliveryFailure(res courier.Result) error {
	for _, d := range res.Devices {
		switch {
		case d.Status != 0:
			return &deliveryError{status: d.Status, err: fmt.Errorf("%d %s", d.Status, http.StatusText(d.Status))}
		case d.Err != nil:
			return &deliveryError{err: d.Err}
		}
	}
	return &deliveryError{err: courier.ErrNoRecipients}
}

// pushQueue delivers one request's pushes in order on a goroutine of its
// own: the SSE transport's backups, and its only delivery once the client
// has gone.
type pushQueue struct {
	mu     sync.Mutex
	items  []backup
	closed bool
	wake   chan struct{}
	done   chan struct{}
}

func (s *Server) newPushQueue(ctx context.Context, to *courier.Round) *pushQueue {
	q := &pushQueue{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run(func(b backup) {
		if err := s.deliverPush(ctx, to, b.push, b.streamed); err != nil {
			s.log.WarnContext(ctx, "backup push failed", "messageId", b.push.CommonFields().MessageID, "err", err)
		}
	})
	return q
}

// backup is a push of the queue and whether the stream delivered it.
type backup struct {
	push     push.Push
	streamed bool
}

func (q *pushQueue) run(send func(backup)) {
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

// add queues p behind the pushes already queued; streamed says the stream
// delivered it.
func (q *pushQueue) add(p push.Push, streamed bool) {
	q.mu.Lock()
	q.items = append(q.items, backup{p, streamed})
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
