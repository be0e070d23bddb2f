package webpush

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"amsg/push"
)

// Issue 22, finding 10: a push service that starts hanging gets the short
// timeout after HungAfter timeouts in a row, and the full one again once it
// answers.
func TestHangBreakerShortensAHangingOriginsTimeout(t *testing.T) {
	var answering atomic.Bool
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answering.Load() {
			w.WriteHeader(http.StatusCreated)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body) // then the server notices the sender leave
		<-r.Context().Done()               // hang until the sender gives up
	}))
	t.Cleanup(hanging.Close)
	f := newFixture(t, func(c *Config) {
		c.Timeout, c.HungAfter, c.HungTimeout, c.MaxAttempts = 200*time.Millisecond, 2, 20*time.Millisecond, 1
	})
	sub := f.ps.Subscribe()
	sub.Endpoint = hanging.URL + "/push/1"
	origin := hanging.URL
	send := func() Delivery {
		d, err := f.sender.Send(waitCtx(t), sub, Message{ID: "m", Kind: push.KindContent, Payload: []byte(`{}`), Source: push.SourceInstant})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for i := range 2 {
		if got := f.sender.hangs.requestTimeout(origin, time.Minute); got != time.Minute {
			t.Fatalf("after %d timeouts the timeout is %s; the breaker trips after 2", i, got)
		}
		if d := send(); d.Outcome != push.OutcomeFailed {
			t.Fatalf("a hung request: %+v", d)
		}
	}
	if got := f.sender.hangs.requestTimeout(origin, time.Minute); got != 20*time.Millisecond {
		t.Fatalf("after 2 timeouts in a row the timeout is %s, want the hung timeout", got)
	}
	if got := f.sender.hangs.requestTimeout("https://push.other.example", time.Minute); got != time.Minute {
		t.Fatalf("another origin's timeout is %s", got)
	}
	answering.Store(true)
	if d := send(); d.Outcome != push.OutcomeDelivered {
		t.Fatalf("the service answers again: %+v", d)
	}
	if got := f.sender.hangs.requestTimeout(origin, time.Minute); got != time.Minute {
		t.Fatalf("after an answer the timeout is %s, want the full one", got)
	}
}
