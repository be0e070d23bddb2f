package webhook_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"amsg/push/clocktest"
	"amsg/scheduler/webhook"
	"amsg/store"
	"amsg/store/storetest"
)

// Every test runs on SQLite, then again with its stores on PostgreSQL.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		code = storetest.RunOnPostgres()
	}
	os.Exit(code)
}

const user = "550e8400-e29b-41d4-a716-446655440000"

// received is one request a receiver accepted.
type received struct {
	ID        string
	Timestamp string
	Body      []byte
}

// receiver is a webhook endpoint on loopback that verifies every request
// with the Standard Webhooks reference library, and answers 503 while down.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	verify *standardwebhooks.Webhook

	mu    sync.Mutex
	down  bool
	tries int
	got   []received
}

func newReceiver(t *testing.T, secret string) *receiver {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{t: t, verify: wh}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		r.t.Error(err)
		return
	}
	// The clock is the test's, hours from now: the signature is checked,
	// the timestamp's tolerance is not.
	if err := r.verify.VerifyIgnoringTimestamp(body, req.Header); err != nil {
		r.t.Errorf("webhook %s does not verify with the reference library: %v", req.Header.Get("webhook-id"), err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tries++
	if r.down {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	r.got = append(r.got, received{req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), body})
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) setDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

func (r *receiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// fixture is a store, a clock and a dispatcher that sends to loopback.
type fixture struct {
	st  *store.Store
	clk *clocktest.Clock
	d   *webhook.Dispatcher
}

func newFixture(t testing.TB, cfg webhook.Config) fixture {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC))
	st := storetest.Open(t, store.Config{Now: clk.Now})
	cfg.Now = clk.Now
	cfg.AllowPrivate = !cfg.AllowPrivate // the zero Config of a test reaches loopback
	if cfg.Jitter == nil {
		cfg.Jitter = func(d time.Duration) time.Duration { return d }
	}
	d, err := webhook.New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{st, clk, d}
}

func (f fixture) endpoint(t testing.TB, id, url string, batch bool, events ...string) string {
	t.Helper()
	secret := webhook.GenerateSecret()
	if _, err := f.st.PutWebhookEndpoint(t.Context(), store.WebhookEndpoint{ID: id, URL: url, Events: events, Secret: secret, Batch: batch}); err != nil {
		t.Fatal(err)
	}
	return secret
}

func (f fixture) events(t testing.TB, events ...store.MessageEvent) {
	t.Helper()
	for i := range events {
		if events[i].UserID == "" {
			events[i].UserID = user
		}
	}
	if err := f.st.AppendMessageEvents(t.Context(), events...); err != nil {
		t.Fatal(err)
	}
}

func (f fixture) pass(t testing.TB) {
	t.Helper()
	if err := f.d.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func decode(t *testing.T, body []byte) webhook.Payload {
	t.Helper()
	var p webhook.Payload
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("payload %s: %v", body, err)
	}
	return p
}

var allTypes = webhook.EventTypes

// TestReceiverDownThenBack: a receiver that answers 503 for three hours
// then comes back receives every event once, each message's in the order
// they happened, each verified with the reference library; retries follow
// the doubling backoff and a message's later events wait for its first.
func TestReceiverDownThenBack(t *testing.T) {
	f := newFixture(t, webhook.Config{})
	secret := webhook.GenerateSecret()
	rcv := newReceiver(t, secret)
	if _, err := f.st.PutWebhookEndpoint(t.Context(), store.WebhookEndpoint{ID: "wh_a", URL: rcv.srv.URL + "/hook?token=t0ken",
		Events: allTypes, Secret: secret}); err != nil {
		t.Fatal(err)
	}
	rcv.setDown(true)
	f.events(t,
		store.MessageEvent{MessageID: "m1", Type: store.EventQueued}, // no webhook type
		store.MessageEvent{MessageID: "m1", Type: store.EventSent},
		store.MessageEvent{MessageID: "m2", Type: store.EventSent},
		store.MessageEvent{MessageID: "m1", DeviceID: "7", Type: store.EventAccepted, Detail: json.RawMessage(`{"status":201}`)},
		store.MessageEvent{DeviceID: "7", Type: store.EventDeviceGone},
		store.MessageEvent{MessageID: "m2", DeviceID: "7", Type: store.EventGone, Detail: json.RawMessage(`{"status":410}`)},
		store.MessageEvent{MessageID: "m1", DeviceID: "7", Type: store.EventShown},
	)
	var tries []int
	for elapsed := time.Duration(0); elapsed < 3*time.Hour; elapsed = f.clk.Now().Sub(time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)) {
		f.pass(t)
		rcv.mu.Lock()
		tries = append(tries, rcv.tries)
		rcv.mu.Unlock()
		f.clk.Add(5 * time.Minute)
	}
	// While down, only the first event of each message and the unordered
	// device.gone are tried: three requests a round.
	if tries[0] != 3 {
		t.Errorf("first pass tried %d requests, want 3 (m1's first, m2's first, device.gone)", tries[0])
	}
	health, err := f.st.WebhookHealth(t.Context())
	if err != nil || health["wh_a"].Pending != 6 || health["wh_a"].Failed != 0 {
		t.Fatalf("health while down = %+v, %v; want 6 pending", health, err)
	}

	rcv.setDown(false)
	f.clk.Add(time.Hour) // past the longest backoff
	f.pass(t)
	got := rcv.received()
	var order []string
	ids := map[string]bool{}
	for _, r := range got {
		if ids[r.ID] {
			t.Errorf("webhook %s received twice", r.ID)
		}
		ids[r.ID] = true
		if r.Timestamp != strconv.FormatInt(f.clk.Now().Unix(), 10) {
			t.Errorf("webhook-timestamp %s, want the clock's %d", r.Timestamp, f.clk.Now().Unix())
		}
		p := decode(t, r.Body)
		order = append(order, p.Data.MessageID+":"+p.Type)
	}
	perMessage := func(msg string) []string {
		var out []string
		for _, o := range order {
			if strings.HasPrefix(o, msg+":") {
				out = append(out, o)
			}
		}
		return out
	}
	if want := []string{"m1:message.sent", "m1:message.delivered", "m1:message.shown"}; !slices.Equal(perMessage("m1"), want) {
		t.Errorf("m1's webhooks = %v, want %v", perMessage("m1"), want)
	}
	if want := []string{"m2:message.sent", "m2:message.failed"}; !slices.Equal(perMessage("m2"), want) {
		t.Errorf("m2's webhooks = %v, want %v", perMessage("m2"), want)
	}
	if len(got) != 6 {
		t.Errorf("received %d webhooks (%v), want 6", len(got), order)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(f.d.Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counted := map[string]float64{}
	for _, m := range families[0].GetMetric() {
		counted[m.GetLabel()[0].GetValue()+" "+m.GetLabel()[1].GetValue()] = m.GetCounter().GetValue()
	}
	if want := map[string]float64{"wh_a done": 6, "wh_a pending": float64(tries[len(tries)-1])}; !maps.Equal(counted, want) {
		t.Errorf("amsg_webhook_tries_total %v, want %v", counted, want)
	}
	f.pass(t)
	if again := rcv.received(); len(again) != len(got) {
		t.Errorf("a pass with nothing due sent %d more", len(again)-len(got))
	}
	i := slices.IndexFunc(got, func(r received) bool {
		return strings.HasPrefix(r.ID, "msg_wh_a_") && decode(t, r.Body).Data.Event == store.EventSent
	})
	p := decode(t, got[i].Body)
	if p.Data.UserID != user || p.Data.Event != store.EventSent || p.Timestamp != "2026-11-26T08:00:00.000Z" || p.Data.Seq == "" {
		t.Errorf("payload %s", got[i].Body)
	}
}

// TestGiveUpAfterRetryWindow: a receiver that never answers 2xx is tried
// with doubling waits, capped at an hour, until a day has passed, the last
// try at the day's end; the delivery is then failed (and counted as such),
// and the message's next event, whose own day has passed while it waited,
// gets one try and is given up too.
func TestGiveUpAfterRetryWindow(t *testing.T) {
	f := newFixture(t, webhook.Config{})
	secret := webhook.GenerateSecret()
	rcv := newReceiver(t, secret)
	rcv.setDown(true)
	if _, err := f.st.PutWebhookEndpoint(t.Context(), store.WebhookEndpoint{ID: "wh_a", URL: rcv.srv.URL, Events: allTypes, Secret: secret}); err != nil {
		t.Fatal(err)
	}
	start := f.clk.Now()
	f.events(t, store.MessageEvent{MessageID: "m1", Type: store.EventSent}, store.MessageEvent{MessageID: "m1", Type: store.EventShown})
	var at []time.Duration
	tries := 0
	for range 100 {
		f.pass(t)
		rcv.mu.Lock()
		n := rcv.tries
		rcv.mu.Unlock()
		if n == tries {
			break
		}
		for ; tries < n; tries++ {
			at = append(at, f.clk.Now().Sub(start))
		}
		wait := webhook.DefaultBaseBackoff
		for range len(at) - 1 {
			wait = min(2*wait, webhook.DefaultMaxBackoff)
		}
		f.clk.Add(min(wait, start.Add(24*time.Hour).Sub(f.clk.Now())))
	}
	want := []time.Duration{0, 5 * time.Second, 15 * time.Second, 35 * time.Second, 75 * time.Second}
	if len(at) < len(want) || !slices.Equal(at[:len(want)], want) {
		t.Errorf("tries at %v, want them to start %v (5s doubling)", at, want)
	}
	if last := at[len(at)-2:]; last[0] != 24*time.Hour || last[1] != 24*time.Hour {
		t.Errorf("the last tries at %v, want both at the window's end (24h): the first's last, the second's only", last)
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i] - at[i-1]; gap > time.Hour {
			t.Errorf("%v between tries %d and %d, over the hour's cap", gap, i-1, i)
		}
	}
	health, err := f.st.WebhookHealth(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	h := health["wh_a"]
	if h.Failed != 2 || h.Pending != 0 || h.LastFailure == nil || h.LastFailure.LastStatus != 503 || h.LastFailure.LastError != "status 503" {
		t.Fatalf("health after the window = %+v (%+v); want both events given up with status 503", h, h.LastFailure)
	}
}

// TestBatchEndpoint: an endpoint that batches gets its due events as one
// signed JSON array, still one event per message at a time.
func TestBatchEndpoint(t *testing.T) {
	f := newFixture(t, webhook.Config{})
	secret := webhook.GenerateSecret()
	rcv := newReceiver(t, secret)
	if _, err := f.st.PutWebhookEndpoint(t.Context(), store.WebhookEndpoint{ID: "wh_b", URL: rcv.srv.URL, Events: []string{webhook.MessageSent, webhook.MessageShown},
		Secret: secret, Batch: true}); err != nil {
		t.Fatal(err)
	}
	var events []store.MessageEvent
	for i := range 5 {
		events = append(events, store.MessageEvent{MessageID: fmt.Sprint("m", i), Type: store.EventSent})
	}
	events = append(events, store.MessageEvent{MessageID: "m0", Type: store.EventShown}, store.MessageEvent{MessageID: "m0", Type: store.EventClicked})
	f.events(t, events...)
	f.pass(t)
	got := rcv.received()
	if len(got) != 2 {
		t.Fatalf("received %d requests, want 2 (five sends, then m0's shown)", len(got))
	}
	var first []webhook.Payload
	if err := json.Unmarshal(got[0].Body, &first); err != nil || len(first) != 5 {
		t.Fatalf("first batch %s: %v", got[0].Body, err)
	}
	var second []webhook.Payload
	if err := json.Unmarshal(got[1].Body, &second); err != nil || len(second) != 1 || second[0].Type != webhook.MessageShown {
		t.Errorf("second batch %s: %v; want m0's shown alone (clicked is not asked for)", got[1].Body, err)
	}
}

// TestEndpointStartsNow: an endpoint hears only of events after it was
// registered, and only of the types it asked for.
func TestEndpointStartsNow(t *testing.T) {
	f := newFixture(t, webhook.Config{})
	f.events(t, store.MessageEvent{MessageID: "old", Type: store.EventSent})
	secret := webhook.GenerateSecret()
	rcv := newReceiver(t, secret)
	if _, err := f.st.PutWebhookEndpoint(t.Context(), store.WebhookEndpoint{ID: "wh_a", URL: rcv.srv.URL, Events: []string{webhook.TaskFailed}, Secret: secret}); err != nil {
		t.Fatal(err)
	}
	f.events(t, store.MessageEvent{MessageID: "new", Type: store.EventSent}, store.MessageEvent{Type: store.EventTaskFailed, Detail: json.RawMessage(`{"taskId":"t1"}`)})
	f.pass(t)
	got := rcv.received()
	if len(got) != 1 || decode(t, got[0].Body).Type != webhook.TaskFailed {
		t.Fatalf("received %v, want the task.failed alone", got)
	}
	if d := decode(t, got[0].Body).Data.Detail; string(d) != `{"taskId":"t1"}` {
		t.Errorf("detail %s", d)
	}
}

// TestTwoInstancesSendOnce runs two dispatchers on two stores of one
// PostgreSQL database, each elected through the store's leadership: every
// event reaches the receiver once, whichever passes first.
func TestTwoInstancesSendOnce(t *testing.T) {
	url := storetest.DatabaseURL(t)
	clk := clocktest.New(time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC))
	secret := webhook.GenerateSecret()
	rcv := newReceiver(t, secret)
	var instances []*webhook.Dispatcher
	var stores []*store.Store
	for range 2 {
		st := storetest.Open(t, store.Config{DatabaseURL: url, Now: clk.Now})
		leader := st.Leader("webhooks", time.Minute)
		t.Cleanup(func() { _ = leader.Release() })
		d, err := webhook.New(st, webhook.Config{AllowPrivate: true, Now: clk.Now, Leader: leader})
		if err != nil {
			t.Fatal(err)
		}
		instances, stores = append(instances, d), append(stores, st)
	}
	if _, err := stores[0].PutWebhookEndpoint(t.Context(), store.WebhookEndpoint{ID: "wh_a", URL: rcv.srv.URL, Events: allTypes, Secret: secret}); err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		for i := range 4 {
			if err := stores[(round+i)%2].AppendMessageEvents(t.Context(), store.MessageEvent{UserID: user, MessageID: fmt.Sprint("m", i), Type: store.EventSent}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for _, d := range instances {
			wg.Go(func() {
				if err := d.Pass(t.Context()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	seen := map[string]int{}
	for _, r := range rcv.received() {
		seen[r.ID]++
	}
	if len(seen) != 20 {
		t.Errorf("received %d distinct webhooks, want 20", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("webhook %s received %d times", id, n)
		}
	}
}

// TestConfigBounds: absurd settings are refused with the bound they break.
func TestConfigBounds(t *testing.T) {
	st := storetest.New(t)
	for _, tt := range []struct {
		cfg  webhook.Config
		want string
	}{
		{webhook.Config{RetryFor: time.Hour}, "retry window 1h0m0s is outside [24h0m0s, 720h0m0s]"},
		{webhook.Config{RetryFor: 365 * 24 * time.Hour}, "retry window 8760h0m0s"},
		{webhook.Config{BaseBackoff: time.Hour, MaxBackoff: time.Minute}, "backoff 1h0m0s to 1m0s must grow"},
		{webhook.Config{MaxBackoff: 48 * time.Hour}, "within the retry window"},
		{webhook.Config{Timeout: -time.Second}, "timeout -1s"},
		{webhook.Config{Timeout: time.Hour}, "timeout 1h0m0s is outside"},
		{webhook.Config{Concurrency: 1000}, "concurrency 1000"},
		{webhook.Config{MaxBatch: 10_000}, "batch size 10000"},
		{webhook.Config{MaxResponseBytes: 1 << 30}, "response read cap"},
		{webhook.Config{PollInterval: time.Hour}, "poll interval"},
	} {
		_, err := webhook.New(st, tt.cfg)
		if !errors.Is(err, webhook.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want …%s…", tt.cfg, err, tt.want)
		}
	}
}
