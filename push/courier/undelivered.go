package courier

import (
	"context"
	"fmt"
	"net/http"

	"amsg/push"
)

// UndeliveredError is a push that reached none of its recipients: the last
// status a push service answered (0 if none did) and why. Producers that
// must answer for every push (the instant paths, a resumed approval's
// round) find it with errors.As.
type UndeliveredError struct {
	Status int
	Err    error
}

func (e *UndeliveredError) Error() string { return "Web Push delivery failed: " + e.Err.Error() }
func (e *UndeliveredError) Unwrap() error { return e.Err }

// Reach is Push (PushStreamed when streamed) for a producer that needs the
// push to reach someone: it fails with an *UndeliveredError when no
// recipient took it. A push the policy kept off Web Push counts as reached:
// it is in the outbox; so does one the round's stream delivered.
func (r *Round) Reach(ctx context.Context, p push.Push, streamed bool) error {
	res, err := r.push(ctx, p, streamed)
	if err != nil {
		return &UndeliveredError{Err: err}
	}
	if res.Withheld || res.Streamed || res.Delivered() > 0 {
		return nil
	}
	return res.Undelivered()
}

// Undelivered says why no recipient took the push, as an *UndeliveredError:
// what a push service answered, else why no answer came, else that there
// was nobody to send to.
func (res Result) Undelivered() *UndeliveredError {
	for _, d := range res.Devices {
		switch {
		case d.Status != 0:
			return &UndeliveredError{Status: d.Status, Err: fmt.Errorf("%d %s", d.Status, http.StatusText(d.Status))}
		case d.Err != nil:
			return &UndeliveredError{Err: d.Err}
		}
	}
	return &UndeliveredError{Err: ErrNoRecipients}
}
