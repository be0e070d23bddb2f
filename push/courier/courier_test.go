package courier_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/clocktest"
	"amsg/push/courier"
	"amsg/push/pushtest"
	"amsg/push/webpush"
	"amsg/store"
	"amsg/store/storetest"
)

const alice, bob = "alice", "bob"

type fixture struct {
	st    *store.Store
	reads *countingStore
	push  *pushtest.Server
	c     *courier.Courier
}

// countingStore counts the device reads that reach the store.
type countingStore struct {
	*store.Store
	devices atomic.Int32
}

func (c *countingStore) Devices(ctx context.Context, userID string) ([]push.Device, error) {
	c.devices.Add(1)
	return c.Store.Devices(ctx, userID)
}

func newFixture(t *testing.T, policy courier.Policy) *fixture {
	t.Helper()
	return newFixtureWith(t, courier.Config{Policy: policy})
}

// newFixtureWith is newFixture with the courier configured by cfg (its
// logger set to the test's).
func newFixtureWith(t *testing.T, cfg courier.Config) *fixture {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	st := storetest.New(t)
	sec := st.Secrets()
	fake := pushtest.NewServer(sec.VAPIDPublicKey)
	t.Cleanup(fake.Close)
	sender, err := webpush.NewSender(webpush.Config{VAPIDPublicKey: sec.VAPIDPublicKey, VAPIDPrivateKey: sec.VAPIDPrivateKey,
		Subject: "mailto:ops@amsg.test", AllowPrivateEndpoints: true, MaxAttempts: 1, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	reads := &countingStore{Store: st}
	cfg.Logger = logger
	return &fixture{st: st, reads: reads, push: fake, c: courier.New(sender, reads, cfg)}
}

func (f *fixture) subscribe(t *testing.T, userID string, sub push.Subscription) push.Device {
	t.Helper()
	raw, _ := json.Marshal(sub)
	d, err := f.st.PutSubscription(t.Context(), userID, raw, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func content(t testing.TB, id, text string) push.Push {
	t.Helper()
	p, err := push.Decode([]byte(`{"messageKind":"content","messageType":"instant","source":"instant","messageSubtype":"chat",` +
		`"messageId":"` + id + `","sessionId":"sess_1","timestamp":"2026-06-01T09:00:00.000Z","title":"Rei","message":"` + text + `",` +
		`"contactName":"Rei","avatarUrl":null,"messageIndex":1,"totalMessages":1,"metadata":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func reasoning(t *testing.T, id string) push.Push {
	t.Helper()
	p, err := push.Decode([]byte(`{"messageKind":"reasoning","messageType":"instant","source":"instant","messageSubtype":"chat",` +
		`"messageId":"` + id + `","sessionId":"sess_1","timestamp":"2026-06-01T09:00:00.000Z","title":"Rei",` +
		`"reasoningContent":"thinking","contactName":"Rei","avatarUrl":null,"metadata":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// SendPush (test-push's and the operator's send) reaches every device,
// records the push in the outbox marked delivered, and logs each attempt.
func TestSendPushDeliversRecordsAndMarks(t *testing.T) {
	f := newFixture(t, courier.PolicyVisible)
	d1 := f.subscribe(t, alice, f.push.Subscribe())
	d2 := f.subscribe(t, alice, f.push.Subscribe())
	res, err := f.c.SendPush(t.Context(), alice, push.SourceInstant, content(t, "msg_1", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	if res.MessageID != "msg_1" || res.Delivered() != 2 || len(res.Devices) != 2 {
		t.Fatalf("result %+v", res)
	}
	got := map[int64]bool{}
	for _, d := range res.Devices {
		got[d.DeviceID] = d.Outcome == push.OutcomeDelivered
	}
	if !got[d1.ID] || !got[d2.ID] {
		t.Errorf("per-device outcomes %v, want devices %d and %d delivered", got, d1.ID, d2.ID)
	}
	for _, p := range f.push.Pushes() {
		var m map[string]any
		if err := json.Unmarshal(p.JSON, &m); err != nil || m["messageId"] != "msg_1" || m["message"] != "hello" {
			t.Errorf("decrypted push %s (%v)", p.JSON, err)
		}
	}
	if n := len(f.push.Pushes()); n != 2 {
		t.Errorf("%d pushes reached the push service, want 2", n)
	}
	page, err := f.st.UnackedOutbox(t.Context(), alice, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 1 || page.Entries[0].MessageID != "msg_1" || page.Entries[0].DeliveredAt.IsZero() {
		t.Errorf("outbox %+v, want msg_1 delivered", page.Entries)
	}
	attempts, err := f.st.Attempts(t.Context(), "msg_1")
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 2 || attempts[0].UserID != alice || attempts[0].Outcome != push.OutcomeDelivered {
		t.Errorf("attempts %+v", attempts)
	}
}

func TestSendPushWithoutDevices(t *testing.T) {
	f := newFixture(t, courier.PolicyVisible)
	if _, err := f.c.SendPush(t.Context(), alice, push.SourceInstant, content(t, "msg_1", "x")); !errors.Is(err, courier.ErrNoRecipients) {
		t.Errorf("err %v, want ErrNoRecipients", err)
	}
}

// A round reads the user's devices once, however many pushes it sends, and
// a second round opened meanwhile shares that read.
func TestRoundReadsDevicesOnce(t *testing.T) {
	f := newFixture(t, courier.PolicyVisible)
	f.subscribe(t, alice, f.push.Subscribe())
	r1, err := f.c.Open(t.Context(), courier.Recipients{UserID: alice}, push.SourceScheduled)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := f.c.Open(t.Context(), courier.Recipients{UserID: alice}, push.SourceScheduled)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"m0", "m1", "m2"} {
		r := []*courier.Round{r1, r2}[i%2]
		if res, err := r.Push(t.Context(), content(t, id, id)); err != nil || res.Delivered() != 1 {
			t.Fatalf("push %s: %+v, %v", id, res, err)
		}
	}
	if n := f.reads.devices.Load(); n != 1 {
		t.Errorf("devices read %d times for 3 pushes in 2 rounds, want once", n)
	}
	// A device registered meanwhile is found once the API says so.
	f.subscribe(t, alice, f.push.Subscribe())
	f.c.Forget(alice)
	res, err := f.c.SendPush(t.Context(), alice, push.SourceScheduled, content(t, "m3", "m3"))
	if err != nil || res.Delivered() != 2 {
		t.Errorf("after Forget: %+v, %v: want both devices", res, err)
	}
	if n := f.reads.devices.Load(); n != 2 {
		t.Errorf("devices read %d times after Forget, want 2", n)
	}
}

// Devices read longer ago than DeviceMaxAge are read again.
func TestDevicesAreReadAgainWhenOld(t *testing.T) {
	f := newFixture(t, courier.PolicyVisible)
	f.subscribe(t, alice, f.push.Subscribe())
	clock := clocktest.New(time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC))
	c := courier.New(nil, f.reads, courier.Config{DeviceMaxAge: time.Minute, Now: clock.Now})
	for _, step := range []time.Duration{0, 59 * time.Second, 2 * time.Second} {
		clock.Add(step)
		if _, err := c.Open(t.Context(), courier.Recipients{UserID: alice}, push.SourceScheduled); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.reads.devices.Load(); n != 2 {
		t.Errorf("devices read %d times at 0 s, 59 s and 61 s with a 60 s bound, want 2", n)
	}
}

// A device its push service reports gone is deleted, and the round's later
// pushes skip it.
func TestGoneDeviceIsDeletedAndSkipped(t *testing.T) {
	f := newFixture(t, courier.PolicyVisible)
	gone := f.push.Subscribe()
	f.subscribe(t, alice, gone)
	f.subscribe(t, alice, f.push.Subscribe())
	f.push.Unsubscribe(gone)
	r, err := f.c.Open(t.Context(), courier.Recipients{UserID: alice}, push.SourceInstant)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Push(t.Context(), content(t, "m0", "a"))
	if err != nil || res.Delivered() != 1 || len(res.Devices) != 2 {
		t.Fatalf("first push %+v, %v", res, err)
	}
	devices, err := f.st.Devices(t.Context(), alice)
	if err != nil || len(devices) != 1 {
		t.Fatalf("devices after a 410: %v, %v", devices, err)
	}
	res, err = r.Push(t.Context(), content(t, "m1", "b"))
	if err != nil || len(res.Devices) != 1 || res.Delivered() != 1 {
		t.Errorf("second push %+v, %v: want only the live device", res, err)
	}
}

// The request's own subscription is sent to once even when it is also one
// of the user's devices.
func TestRequestSubscriptionThatIsADeviceGetsOnePush(t *testing.T) {
	f := newFixture(t, courier.PolicyVisible)
	sub := f.push.Subscribe()
	f.subscribe(t, alice, sub)
	r, err := f.c.Open(t.Context(), courier.Recipients{UserID: alice, Subscription: &sub}, push.SourceInstant)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.Push(t.Context(), content(t, "m0", "a")); err != nil || len(res.Devices) != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	if n := len(f.push.Pushes()); n != 1 {
		t.Errorf("%d pushes, want 1", n)
	}
}

// A push the round's stream delivered skips the streaming device (the
// request's subscription, here also a stored device) under the visible
// policy, reaches the user's other device, and is still recorded; under
// upstream every device gets it.
func TestStreamedPushSkipsTheStreamingDevice(t *testing.T) {
	for _, tt := range []struct {
		policy  courier.Policy
		devices int
	}{{courier.PolicyVisible, 1}, {courier.PolicyUpstream, 2}} {
		t.Run(string(tt.policy), func(t *testing.T) {
			f := newFixture(t, tt.policy)
			phone, tablet := f.push.Subscribe(), f.push.Subscribe()
			f.subscribe(t, alice, phone)
			f.subscribe(t, alice, tablet)
			r, err := f.c.Open(t.Context(), courier.Recipients{UserID: alice, Subscription: &phone}, push.SourceInstant)
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.PushStreamed(t.Context(), content(t, "m_streamed", "a"))
			if err != nil || len(res.Devices) != tt.devices || res.Streamed != (tt.policy == courier.PolicyVisible) {
				t.Fatalf("%+v, %v", res, err)
			}
			for _, p := range f.push.Pushes() {
				if tt.policy == courier.PolicyVisible && p.Endpoint != tablet.Endpoint {
					t.Errorf("the streaming device got a copy: %s", p.Endpoint)
				}
			}
			if n := len(f.push.Pushes()); n != tt.devices {
				t.Errorf("%d pushes, want %d", n, tt.devices)
			}
			if page, err := f.st.UnackedOutbox(t.Context(), alice, 0, 10); err != nil || len(page.Entries) != 1 {
				t.Errorf("outbox %+v, %v", page, err)
			}
		})
	}
}

// Under the visible policy a reasoning push is recorded in the outbox but
// never reaches a push service; under upstream it goes like any other.
func TestPushPolicy(t *testing.T) {
	for _, tt := range []struct {
		policy courier.Policy
		sent   int
	}{{courier.PolicyVisible, 1}, {courier.PolicyUpstream, 2}} {
		t.Run(string(tt.policy), func(t *testing.T) {
			f := newFixture(t, tt.policy)
			f.subscribe(t, alice, f.push.Subscribe())
			r, err := f.c.Open(t.Context(), courier.Recipients{UserID: alice}, push.SourceInstant)
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Push(t.Context(), reasoning(t, "m_reasoning"))
			if err != nil || res.Withheld != (tt.policy == courier.PolicyVisible) {
				t.Fatalf("reasoning push %+v, %v", res, err)
			}
			if _, err := r.Push(t.Context(), content(t, "m_0", "a")); err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, p := range f.push.Pushes() {
				var m map[string]any
				_ = json.Unmarshal(p.JSON, &m)
				kinds = append(kinds, m["messageKind"].(string))
			}
			if len(kinds) != tt.sent || kinds[len(kinds)-1] != "content" {
				t.Errorf("pushes of kinds %v, want %d ending with content", kinds, tt.sent)
			}
			page, err := f.st.UnackedOutbox(t.Context(), alice, 0, 10)
			if err != nil || len(page.Entries) != 2 || page.Entries[0].MessageID != "m_reasoning" {
				t.Errorf("outbox %+v, %v: want both pushes recorded", page.Entries, err)
			}
		})
	}
	if _, err := courier.ParsePolicy("loud"); err == nil {
		t.Error("ParsePolicy accepted an unknown policy")
	}
}

// One user whose push service hangs holds at most PerUser sends; another
// user's push goes through meanwhile.
func TestHangingPushServiceHoldsOnlyItsUser(t *testing.T) {
	f := newFixture(t, courier.PolicyVisible)
	release := make(chan struct{})
	arrived := make(chan struct{}, 16)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		w.WriteHeader(http.StatusCreated)
	}))
	defer hang.Close()
	stuck := f.push.Subscribe()
	stuck.Endpoint = hang.URL + "/push/stuck"
	f.subscribe(t, alice, stuck)
	f.subscribe(t, bob, f.push.Subscribe())

	done := make(chan error, 8)
	for i := range 8 {
		go func() {
			_, err := f.c.SendPush(context.WithoutCancel(t.Context()), alice, push.SourceInstant, content(t, "a"+string(rune('0'+i)), "x"))
			done <- err
		}()
	}
	for range courier.DefaultPerUser {
		<-arrived // alice's sends in flight, held
	}
	res, err := f.c.SendPush(t.Context(), bob, push.SourceInstant, content(t, "b0", "y"))
	if err != nil || res.Delivered() != 1 {
		t.Fatalf("bob's push while alice's hang: %+v, %v", res, err)
	}
	select {
	case <-arrived:
		t.Errorf("more than %d of alice's sends in flight at once", courier.DefaultPerUser)
	default:
	}
	close(release)
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func outgoing(t *testing.T, id string) courier.Outgoing {
	t.Helper()
	m, err := push.NewOutboxMessage(content(t, id, "hi"))
	if err != nil {
		t.Fatal(err)
	}
	return courier.Outgoing{OutboxMessage: m, Kind: push.KindContent}
}

// A push the outbox does not hold yet is recorded with its delivery:
// delivered when a device took it, undelivered (for a page that catches up)
// when none did. DeliverLast hands the bookkeeping back instead, for the
// producer's completion to write.
func TestDeliverRecordsAnUnrecordedPushWithItsDelivery(t *testing.T) {
	f := newFixture(t, courier.PolicyVisible)
	sub := f.push.Subscribe()
	f.subscribe(t, alice, sub)
	r, err := f.c.Open(t.Context(), courier.Recipients{UserID: alice}, push.SourceScheduled)
	if err != nil {
		t.Fatal(err)
	}
	outbox := func() []push.OutboxEntry {
		page, err := f.st.UnackedOutbox(t.Context(), alice, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		return page.Entries
	}

	if res, err := r.Deliver(t.Context(), outgoing(t, "m_0")); err != nil || res.Delivered() != 1 {
		t.Fatalf("Deliver = %+v, %v", res, err)
	}
	if e := outbox(); len(e) != 1 || e[0].MessageID != "m_0" || e[0].DeliveredAt.IsZero() {
		t.Errorf("outbox %+v, want m_0 delivered", e)
	}

	f.push.Respond(sub, 1, pushtest.Response{Status: http.StatusInternalServerError})
	if res, err := r.Deliver(t.Context(), outgoing(t, "m_1")); err != nil || res.Delivered() != 0 {
		t.Fatalf("Deliver to a failing push service = %+v, %v", res, err)
	}
	if e := outbox(); len(e) != 2 || e[1].MessageID != "m_1" || !e[1].DeliveredAt.IsZero() {
		t.Errorf("outbox %+v, want m_1 recorded undelivered", e)
	}
	if attempts, err := f.st.Attempts(t.Context(), "m_1"); err != nil || len(attempts) != 1 || attempts[0].Status != http.StatusInternalServerError {
		t.Errorf("attempts of m_1 = %+v, %v", attempts, err)
	}

	res, held, err := r.DeliverLast(t.Context(), outgoing(t, "m_2"))
	if err != nil || res.Delivered() != 1 {
		t.Fatalf("DeliverLast = %+v, %v", res, err)
	}
	if e := outbox(); len(e) != 2 {
		t.Errorf("DeliverLast wrote the outbox itself: %+v", e)
	}
	if len(held.Record) != 1 || held.Record[0].MessageID != "m_2" || len(held.Attempts) != 1 || held.UserID != alice {
		t.Errorf("held bookkeeping %+v", held)
	}
	f.c.Keep(t.Context(), held)
	if e := outbox(); len(e) != 3 || e[2].MessageID != "m_2" || e[2].DeliveredAt.IsZero() {
		t.Errorf("outbox after Keep %+v, want m_2 delivered", e)
	}
}

// outboxWatcher is a sender that reports whether the outbox held each push
// when it was sent, and delivers it.
type outboxWatcher struct {
	st       *store.Store
	userID   string
	recorded []bool
}

func (w *outboxWatcher) Send(ctx context.Context, _ push.Subscription, msg webpush.Message) (webpush.Delivery, error) {
	page, err := w.st.UnackedOutbox(ctx, w.userID, 0, 10)
	if err != nil {
		return webpush.Delivery{}, err
	}
	w.recorded = append(w.recorded, slices.ContainsFunc(page.Entries, func(e push.OutboxEntry) bool { return e.MessageID == msg.ID }))
	return webpush.Delivery{Outcome: push.OutcomeDelivered}, nil
}

// An Apple device may get a push cut to a summary its service worker
// completes from GET /outbox, so the outbox holds it before it is sent; a
// push to other devices is recorded only with its delivery.
func TestDeliverRecordsFirstForDevicesThatReadTheOutbox(t *testing.T) {
	for _, tt := range []struct {
		endpoint string
		first    bool
	}{{"https://web.push.apple.com/QGuQyavXutnMqGSXW", true}, {"https://fcm.googleapis.com/fcm/send/abc", false}} {
		st := storetest.New(t)
		raw, _ := json.Marshal(push.Subscription{Endpoint: tt.endpoint, Keys: push.SubscriptionKeys{P256dh: "BP", Auth: "au"}})
		if _, err := st.PutSubscription(t.Context(), alice, raw, time.Time{}); err != nil {
			t.Fatal(err)
		}
		w := &outboxWatcher{st: st, userID: alice}
		r, err := courier.New(w, st, courier.Config{}).Open(t.Context(), courier.Recipients{UserID: alice}, push.SourceScheduled)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Deliver(t.Context(), outgoing(t, "m_0")); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(w.recorded, []bool{tt.first}) {
			t.Errorf("%s: the outbox held the push when it was sent: %v, want %v", tt.endpoint, w.recorded, tt.first)
		}
	}
}

// Issue 22, finding 10: a send that waits to retry gives its push service
// origin's slot back meanwhile, so with one slot per origin another user's
// push to the same service goes out during the wait.
func TestASendWaitingToRetryLetsOthersThrough(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	st := storetest.New(t)
	sec := st.Secrets()
	fake := pushtest.NewServer(sec.VAPIDPublicKey)
	t.Cleanup(fake.Close)
	var c *courier.Courier
	var during courier.Result
	var duringErr error
	waits := 0
	sender, err := webpush.NewSender(webpush.Config{VAPIDPublicKey: sec.VAPIDPublicKey, VAPIDPrivateKey: sec.VAPIDPrivateKey,
		Subject: "mailto:ops@amsg.test", AllowPrivateEndpoints: true, MaxAttempts: 2, Logger: logger,
		Sleep: func(ctx context.Context, d time.Duration) error {
			if waits++; waits == 1 {
				// Alice's send waits to retry: Bob's push to the same
				// service must not wait for it (a bound for a broken
				// courier only).
				bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				during, duringErr = c.SendPush(bctx, bob, push.SourceInstant, content(t, "msg_bob", "hi"))
			}
			return ctx.Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	c = courier.New(sender, st, courier.Config{PerOrigin: 1, Policy: courier.PolicyVisible, Logger: logger})
	f := &fixture{st: st, push: fake, c: c}
	aliceSub := fake.Subscribe()
	f.subscribe(t, alice, aliceSub)
	f.subscribe(t, bob, fake.Subscribe())
	fake.Respond(aliceSub, 1, pushtest.Response{Status: http.StatusServiceUnavailable})

	res, err := c.SendPush(t.Context(), alice, push.SourceInstant, content(t, "msg_alice", "hello"))
	if err != nil || res.Delivered() != 1 {
		t.Fatalf("alice: %+v, %v", res, err)
	}
	if duringErr != nil || during.Delivered() != 1 {
		t.Fatalf("bob's push while alice's waited to retry: %+v, %v", during, duringErr)
	}
}
