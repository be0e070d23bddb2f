package courier_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"amsg/push"
	"amsg/push/courier"
)

// outboxIDs are alice's recorded pushes, and those delivered.
func (f *fixture) outboxIDs(t *testing.T) (ids []string, delivered map[string]bool) {
	t.Helper()
	page, err := f.st.UnackedOutbox(t.Context(), alice, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	delivered = map[string]bool{}
	for _, e := range page.Entries {
		ids = append(ids, e.MessageID)
		delivered[e.MessageID] = !e.DeliveredAt.IsZero()
	}
	return ids, delivered
}

// A round's backups go out in order on the courier's goroutine, and Stop
// returns only once the producer is done and every queued one went; a
// queue opened after Stop sends nothing and keeps its pushes in the outbox
// for the page.
func TestStopWaitsForQueuedBackups(t *testing.T) {
	f := newFixture(t, courier.PolicyVisible)
	f.subscribe(t, alice, f.push.Subscribe())
	round, err := f.c.Open(t.Context(), courier.Recipients{UserID: alice}, push.SourceInstant)
	if err != nil {
		t.Fatal(err)
	}
	q := round.Backups(t.Context())
	for _, id := range []string{"msg_1", "msg_2", "msg_3"} {
		q.Add(content(t, id, "hi"), false)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- f.c.Stop(t.Context()) }()
	q.Wait()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, p := range f.push.Pushes() {
		got, err := push.Decode(p.JSON)
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, got.CommonFields().MessageID)
	}
	if len(sent) != 3 || sent[0] != "msg_1" || sent[1] != "msg_2" || sent[2] != "msg_3" {
		t.Fatalf("pushes sent when Stop returned: %v, want msg_1, msg_2, msg_3 in order", sent)
	}

	late := round.Backups(t.Context())
	late.Add(content(t, "msg_4", "late"), false)
	late.Wait()
	if n := len(f.push.Pushes()); n != 3 {
		t.Errorf("%d pushes sent, want none after Stop", n)
	}
	ids, delivered := f.outboxIDs(t)
	if len(ids) != 4 || !delivered["msg_3"] || delivered["msg_4"] {
		t.Errorf("outbox %v, delivered %v: want msg_1 to msg_3 delivered and msg_4 kept unsent", ids, delivered)
	}
}

// A Stop that cannot wait interrupts the backup under way and keeps it and
// the queued ones in the outbox, unsent, where the page catches up; the
// queue's goroutine has ended when Stop returns, though its producer is
// still adding, and what it adds is kept the same way.
func TestStopKeepsUnsentBackupsInTheOutbox(t *testing.T) {
	f := newFixture(t, courier.PolicyVisible)
	arrived, release := make(chan struct{}, 4), make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	defer hang.Close()
	defer close(release)
	stuck := f.push.Subscribe()
	stuck.Endpoint = hang.URL + "/push/stuck"
	f.subscribe(t, alice, stuck)
	round, err := f.c.Open(t.Context(), courier.Recipients{UserID: alice}, push.SourceInstant)
	if err != nil {
		t.Fatal(err)
	}
	q := round.Backups(t.Context())
	q.Add(content(t, "msg_1", "first"), false)
	q.Add(content(t, "msg_2", "second"), false)
	<-arrived // msg_1 is at the push service, which never answers

	gone, cancel := context.WithCancel(t.Context())
	cancel()
	if err := f.c.Stop(gone); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop = %v, want the context's error", err)
	}
	ids, delivered := f.outboxIDs(t)
	if len(ids) != 2 || ids[0] != "msg_1" || ids[1] != "msg_2" || delivered["msg_1"] || delivered["msg_2"] {
		t.Errorf("outbox %v, delivered %v: want msg_1 and msg_2 kept, unsent", ids, delivered)
	}
	select {
	case <-arrived:
		t.Error("msg_2 was sent after Stop gave up waiting")
	default:
	}
	q.Add(content(t, "msg_3", "third"), false) // the producer's round goes on
	q.Wait()
	if ids, _ := f.outboxIDs(t); len(ids) != 3 {
		t.Errorf("outbox %v, want msg_3 kept too", ids)
	}
}
