package e2e_test

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"amsg/api"
	"amsg/llm"
	"amsg/loop"
	"amsg/push"
	"amsg/push/clocktest"
	"amsg/push/courier"
	"amsg/push/pushtest"
	"amsg/push/webpush"
	"amsg/scheduler"
	"amsg/scheduler/webhook"
	"amsg/store"
	"amsg/store/storetest"
	"amsg/sw"
	"amsg/web"
	"amsg/web/browsertest"
)

// server is the amsg HTTP server as cmd/amsg assembles it, on loopback,
// with its pushes going to a fake push service. Its scheduler does not run
// by itself: a test moves the scheduler's clock and ticks it (fireAt); nor
// does its webhook sender: a test makes it pass (sendWebhooks).
type server struct {
	*httptest.Server
	Store     *store.Store
	Push      *pushtest.Server
	Scheduler *scheduler.Scheduler
	// Webhooks sends to receivers on loopback, as cmd/amsg does with
	// --webhook-allow-private, on the real clock: receivers check the
	// signature's timestamp against theirs.
	Webhooks *webhook.Dispatcher
	// clock is the scheduler's: it stands at the server's start until a
	// test sets it. The API keeps the real clock, so the page and the server
	// agree on what is in the future.
	clock *clocktest.Clock
}

func newServer(t *testing.T) *server {
	t.Helper()
	return newServerWith(t, serverOptions{})
}

// serverOptions change newServer's server.
type serverOptions struct {
	// sender changes the sender's configuration; nil leaves it.
	sender func(*webpush.Config)
	// policy is the courier's push policy; "" is upstream's, which the
	// tests written before the visible policy expect.
	policy courier.Policy
	// strictLLM refuses request-given loopback and private model URLs, as
	// amsg does without --allow-private-llm.
	strictLLM bool
	// operatorModel is the operator's model (--llm-api-url); zero for none.
	operatorModel llm.Model
	// receipts stamps pushes with receipt tokens, as cmd/amsg does.
	receipts bool
}

// newServerWith is newServer with opts.
func newServerWith(t *testing.T, opts serverOptions) *server {
	t.Helper()
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The page's origin is known before the server runs: pushes link to it.
	srv := httptest.NewUnstartedServer(nil)
	t.Cleanup(srv.Close)
	pageURL := "http://" + srv.Listener.Addr().String()
	st := storetest.New(t)
	sec := st.Secrets()
	pushes := pushtest.NewServer(sec.VAPIDPublicKey)
	t.Cleanup(pushes.Close)
	cfg := webpush.Config{
		VAPIDPublicKey:        sec.VAPIDPublicKey,
		VAPIDPrivateKey:       sec.VAPIDPrivateKey,
		Subject:               "https://amsg.dev/e2e",
		AllowPrivateEndpoints: true,
		Logger:                log,
	}
	if opts.sender != nil {
		opts.sender(&cfg)
	}
	sender, err := webpush.NewSender(cfg)
	if err != nil {
		t.Fatal(err)
	}
	courierCfg := courier.Config{Policy: cmp.Or(opts.policy, courier.PolicyUpstream), Logger: log}
	if opts.receipts {
		courierCfg.Receipts = st.ReceiptSigner()
	}
	deliveries := courier.New(sender, st, courierCfg)
	// One LLM client and transcript writer for the scheduler and the
	// instant path, as cmd/amsg has them.
	llmPolicy := llm.URLPolicy{AllowPrivate: !opts.strictLLM}
	client := llm.NewClient(llm.Config{Policy: llmPolicy, Default: opts.operatorModel, Logger: log})
	transcripts := loop.NewTranscripts(st, nil)
	clk := clocktest.New(time.Now())
	sched, err := scheduler.New(scheduler.Config{Now: clk.Now, Logger: log, PageURL: pageURL,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }},
		scheduler.Deps{Store: st, Courier: deliveries, LLM: client, Transcripts: transcripts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sched.Stop(context.Background()) })
	version, err := sw.AssetVersion(web.FS())
	if err != nil {
		t.Fatal(err)
	}
	webhooks, err := webhook.New(st, webhook.Config{AllowPrivate: true, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	broadcasts := scheduler.NewBroadcasts(st, scheduler.BroadcastConfig{Logger: log})
	agent := loop.NewAgent(loop.AgentConfig{Client: client, Transcripts: transcripts, Logger: log, PageURL: pageURL})
	interrupts := scheduler.NewInterrupts(agent, deliveries, scheduler.InterruptsConfig{Logger: log})
	t.Cleanup(func() { _ = interrupts.Stop(context.Background()) })
	h, err := api.New(api.Config{AllowPrivateEndpoints: true, AdminToken: adminToken, LLMPolicy: llmPolicy, Logger: log, PageURL: pageURL,
		WebhookPolicy: webhook.URLPolicy{AllowPrivate: true}}, api.Deps{
		Store:         st,
		Courier:       deliveries,
		Scheduler:     sched,
		Broadcasts:    broadcasts,
		Instant:       &api.Instant{Agent: agent, Interrupts: interrupts, DefaultModel: opts.operatorModel != (llm.Model{})},
		Web:           web.Handler(),
		AdminPage:     web.AdminHandler(),
		ServiceWorker: sw.Handler(version),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := broadcasts.Start(h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broadcasts.Stop)
	srv.Config.Handler = h
	srv.Start()
	return &server{Server: srv, Store: st, Push: pushes, Scheduler: sched, Webhooks: webhooks, clock: clk}
}

// fireAt runs one scheduler tick at the given time, as the background loop
// would then, and returns its summary.
func (s *server) fireAt(t *testing.T, at time.Time) scheduler.Summary {
	t.Helper()
	s.clock.Set(at)
	sum, err := s.Scheduler.Tick(t.Context())
	if err != nil {
		t.Fatalf("tick at %s: %v", at, err)
	}
	return sum
}

// sendWebhooks makes one pass of the webhook sender, as its background
// loop would each poll: every event recorded so far is fanned out and every
// due delivery sent, its answer recorded, before it returns.
func (s *server) sendWebhooks(t *testing.T) {
	t.Helper()
	if err := s.Webhooks.Pass(t.Context()); err != nil {
		t.Fatalf("webhook pass: %v", err)
	}
}

// waitPush waits for the n-th push the fake push service decrypted and
// returns its plaintext.
func (s *server) waitPush(t *testing.T, n int) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	pushes, err := s.Push.WaitPushes(ctx, n)
	if err != nil {
		t.Fatalf("waiting for push %d: %v (errors: %v)", n, err, s.Push.Errors())
	}
	return pushes[n-1].JSON
}

// openApp starts a browser with notifications granted and the page's
// pushManager.subscribe stubbed with a subscription of the fake push
// service, loads the page at hash and waits until the service worker
// controls it.
func openApp(t *testing.T, srv *server, hash string) (*browsertest.Browser, *browsertest.Page, push.Subscription) {
	t.Helper()
	b := browsertest.New(t, browsertest.Config{})
	b.GrantNotifications(srv.URL)
	p, sub := openPage(t, b, srv, hash)
	return b, p, sub
}

// openPage is openApp in a browser the caller configured: notifications
// stay as the browser has them.
func openPage(t *testing.T, b *browsertest.Browser, srv *server, hash string) (*browsertest.Page, push.Subscription) {
	t.Helper()
	p := b.NewPage()
	sub := srv.Push.Subscribe()
	p.StubPushSubscribe(sub)
	p.RecordWorkerMessages()
	p.Navigate(srv.URL + "/" + hash)
	p.WaitServiceWorker()
	return p, sub
}

// userID reads the id the page generated for this browser.
func userID(t *testing.T, p *browsertest.Page) string {
	t.Helper()
	var raw string
	p.Eval(`localStorage.getItem('amsg.userId')`, &raw)
	var id string
	if err := json.Unmarshal([]byte(raw), &id); err != nil {
		t.Fatalf("amsg.userId %q: %v", raw, err)
	}
	return id
}

// deliverPushes hands each plaintext to the worker as a Web Push and waits
// until the worker has settled them all, the signal to wait on before
// reading notifications (see sw/browser_test.go).
func deliverPushes(p *browsertest.Page, plaintexts ...string) {
	var before int
	p.WorkerEval(`self.__amsgTest.pushesSettled()`, &before)
	for _, pt := range plaintexts {
		p.DeliverPush(pt)
	}
	p.WaitForWorker(`self.__amsgTest.pushesSettled() >= ` + strconv.Itoa(before+len(plaintexts)))
}
