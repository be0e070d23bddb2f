// Package webhook tells an operator's receivers what happened to messages,
// as signed webhooks (the Standard Webhooks specification). It follows the
// store's message events: a fan-out reads every new event once and records
// a delivery per interested endpoint before anything is sent, so nothing is
// lost to a crash or a receiver that is down; the sender then sends each
// endpoint's due deliveries, a message's events one at a time and in order,
// and retries what fails with exponential backoff and jitter until the
// retry window (a day by default) closes, when the delivery is given up and
// /admin shows it.
//
// Each endpoint is bounded on its own (requests in flight, time per
// request, bytes of an answer read, no redirects, the outbound address
// policy of push/netguard), on its own goroutine and its own HTTP client,
// so a slow receiver delays only itself and never a push. With several
// instances on one database only the leader of the "webhooks" leadership
// fans out and sends, so each event is sent once (at least once: a
// leader that dies between a receiver's answer and the write recording it
// leaves that delivery to be sent again by the next one, with the same
// webhook-id, which the specification has receivers deduplicate on).
package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"amsg/push/netguard"
	"amsg/store"
)

// Store is the database as webhooks use it; *store.Store is one.
type Store interface {
	WebhookEndpoints(ctx context.Context) ([]store.WebhookEndpoint, error)
	WebhookCursor(ctx context.Context) (int64, error)
	MessageEventsAfter(ctx context.Context, afterSeq int64, limit int) ([]store.MessageEvent, error)
	// AddWebhookDeliveries records deliveries and moves the cursor, fenced
	// on its old value.
	AddWebhookDeliveries(ctx context.Context, from, to int64, deliveries []store.WebhookDelivery) error
	DueWebhookDeliveries(ctx context.Context, endpointID string, now time.Time, limit int) ([]store.WebhookDelivery, error)
	RecordWebhookTry(ctx context.Context, ids []int64, try store.WebhookTry) error
}

// Leader elects the one instance that sends; store.Leader is one.
type Leader interface {
	Check(ctx context.Context) (bool, error)
}

// Config configures a Dispatcher. Zero values take the defaults of
// limits.go.
type Config struct {
	// AllowPrivate lets webhooks reach loopback and private addresses
	// (--webhook-allow-private); by default only public ones.
	AllowPrivate bool
	// Resolver resolves receivers' names (tests); nil is the system's.
	Resolver netguard.Resolver

	Timeout          time.Duration // per request
	MaxResponseBytes int64         // of an answer read before the connection is dropped
	Concurrency      int           // requests in flight per endpoint
	MaxBatch         int           // events per request to an endpoint that batches
	RetryFor         time.Duration // how long a delivery is retried before it is given up
	BaseBackoff      time.Duration // the wait after the first failed try, doubled per try
	MaxBackoff       time.Duration
	PollInterval     time.Duration // how often Run looks for events and due retries

	// Header, when set, adds headers to each request before it is signed
	// and sent: where tracing puts W3C traceparent.
	Header func(ctx context.Context, h http.Header)
	// Leader, when set, elects the instance that sends; nil sends always.
	Leader Leader

	Now    func() time.Time                  // nil: time.Now
	Jitter func(time.Duration) time.Duration // nil: uniform in [d/2, d]
	Logger *slog.Logger                      // nil: slog.Default()
}

// ErrRefusedAddress is the dial error for a receiver at an address the
// outbound policy refuses.
var ErrRefusedAddress = errors.New("webhook receiver address refused")

// Dispatcher fans events out to deliveries and sends them.
type Dispatcher struct {
	st     Store
	cfg    Config
	client *http.Client
	log    *slog.Logger
	tries  *prometheus.CounterVec // metrics.go

	fanMu     sync.Mutex
	fannedOut map[int64]bool // events at most reread behind the cursor already fanned out

	mu      sync.Mutex
	sending map[string]bool // endpoints whose sends run (Run starts one at a time)
	running sync.WaitGroup
}

// New returns a Dispatcher, or ErrInvalidConfig for a setting out of
// bounds.
func New(st Store, cfg Config) (*Dispatcher, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Jitter == nil {
		cfg.Jitter = halfJitter
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Dispatcher{st: st, cfg: cfg, client: newClient(cfg), log: cfg.Logger, tries: newTries(),
		fannedOut: map[int64]bool{}, sending: map[string]bool{}}, nil
}

// newClient is the client every webhook goes through: bounded waits, no
// redirects (a 3xx is a failed try: following one would let a receiver
// point amsg anywhere), no proxy (it would hide the address the policy
// must see), and the outbound address policy on every address dialled.
func newClient(cfg Config) *http.Client {
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
	if !cfg.AllowPrivate {
		dialer.Control = netguard.RefusePrivate(ErrRefusedAddress)
	}
	return &http.Client{
		Timeout: cfg.Timeout,
		Transport: &http.Transport{
			DialContext:           netguard.Dial(dialer, cfg.Resolver),
			ForceAttemptHTTP2:     true,
			MaxConnsPerHost:       cfg.Concurrency,
			MaxIdleConnsPerHost:   cfg.Concurrency,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   cfg.Timeout,
			ResponseHeaderTimeout: cfg.Timeout,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Run makes a pass every PollInterval until ctx ends, then waits for the
// sends in flight. An endpoint whose sends of one pass still run is left
// out of the next.
func (d *Dispatcher) Run(ctx context.Context) {
	tick := time.NewTicker(d.cfg.PollInterval)
	defer tick.Stop()
	for {
		if err := d.pass(ctx, false); err != nil && ctx.Err() == nil {
			d.log.Warn("webhooks: a pass failed", "err", err)
		}
		select {
		case <-ctx.Done():
			d.running.Wait()
			return
		case <-tick.C:
		}
	}
}

// Pass fans out the new events and sends every endpoint's due deliveries,
// and returns when they are sent or put off: what Run does each tick,
// for tests that drive the clock.
func (d *Dispatcher) Pass(ctx context.Context) error { return d.pass(ctx, true) }

func (d *Dispatcher) pass(ctx context.Context, wait bool) error {
	if d.cfg.Leader != nil {
		leads, err := d.cfg.Leader.Check(ctx)
		if err != nil || !leads {
			return err
		}
	}
	endpoints, err := d.st.WebhookEndpoints(ctx)
	if err != nil || len(endpoints) == 0 {
		return err
	}
	fanErr := d.fanOut(ctx, endpoints)
	var pass sync.WaitGroup
	for _, ep := range endpoints {
		if !d.startSending(ep.ID) {
			continue
		}
		pass.Add(1)
		d.running.Add(1)
		go func() {
			defer d.running.Done()
			defer pass.Done()
			defer d.stopSending(ep.ID)
			if err := d.sendDue(ctx, ep); err != nil && ctx.Err() == nil {
				d.log.Warn("webhooks: sending failed", "endpoint", ep.ID, "err", err)
			}
		}()
	}
	if wait {
		pass.Wait()
	}
	return fanErr
}

func (d *Dispatcher) startSending(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sending[id] {
		return false
	}
	d.sending[id] = true
	return true
}

func (d *Dispatcher) stopSending(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.sending, id)
}

// fanOut reads the events past the cursor (and reread behind it) and
// records a delivery per event and endpoint that asked for its type and
// existed before it, moving the cursor in the same write.
func (d *Dispatcher) fanOut(ctx context.Context, endpoints []store.WebhookEndpoint) error {
	d.fanMu.Lock()
	defer d.fanMu.Unlock()
	for {
		cursor, err := d.st.WebhookCursor(ctx)
		if err != nil {
			return err
		}
		events, err := d.st.MessageEventsAfter(ctx, max(0, cursor-reread), fanOutPage)
		if err != nil {
			return err
		}
		to, settled := cursor, d.cfg.Now().Add(-rereadAge)
		var fresh []int64
		var deliveries []store.WebhookDelivery
		for _, e := range events {
			to = max(to, e.Seq)
			if d.fannedOut[e.Seq] || e.Seq <= cursor && e.At.Before(settled) {
				continue
			}
			fresh = append(fresh, e.Seq)
			for _, ep := range endpoints {
				if e.Seq <= ep.StartSeq {
					continue
				}
				if dl, typ, ok := delivery(ep.ID, e); ok && wants(ep, typ) {
					deliveries = append(deliveries, dl)
				}
			}
		}
		if len(fresh) == 0 {
			return nil
		}
		if err := d.st.AddWebhookDeliveries(ctx, cursor, to, deliveries); errors.Is(err, store.ErrWebhookCursorMoved) {
			return nil // a leader before this one moved it: read again next pass
		} else if err != nil {
			return err
		}
		for _, seq := range fresh {
			d.fannedOut[seq] = true
		}
		for seq := range d.fannedOut {
			if seq <= to-reread {
				delete(d.fannedOut, seq)
			}
		}
		if len(events) < fanOutPage {
			return nil
		}
	}
}

func wants(ep store.WebhookEndpoint, typ string) bool { return slices.Contains(ep.Events, typ) }

// sendDue sends ep's due deliveries, Concurrency requests at a time, until
// none is due: a message's next event becomes due when its previous one is
// done, within the same call.
func (d *Dispatcher) sendDue(ctx context.Context, ep store.WebhookEndpoint) error {
	key, err := ParseSecret(ep.Secret)
	if err != nil {
		return err
	}
	page, group := sendPage, 1
	if ep.Batch {
		page, group = min(d.cfg.MaxBatch*d.cfg.Concurrency, store.MaxWebhookDeliveriesPage), d.cfg.MaxBatch
	}
	slots := make(chan struct{}, d.cfg.Concurrency)
	for ctx.Err() == nil {
		due, err := d.st.DueWebhookDeliveries(ctx, ep.ID, d.cfg.Now(), page)
		if err != nil || len(due) == 0 {
			return err
		}
		var wg sync.WaitGroup
		errs := make([]error, 0, len(due)/group+1)
		var errMu sync.Mutex
		for start := 0; start < len(due); start += group {
			batch := due[start:min(start+group, len(due))]
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				if err := d.send(ctx, ep, key, batch); err != nil {
					errMu.Lock()
					errs = append(errs, err)
					errMu.Unlock()
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err // a try not recorded would be due again at once
		}
	}
	return ctx.Err()
}

// send makes one request carrying batch (one delivery, or a JSON array of
// them to an endpoint that batches) and records what became of it.
func (d *Dispatcher) send(ctx context.Context, ep store.WebhookEndpoint, key []byte, batch []store.WebhookDelivery) error {
	id := fmt.Sprintf("msg_%s_%d", ep.ID, batch[0].EventSeq)
	body := batch[0].Payload
	if ep.Batch {
		id = fmt.Sprintf("msg_%s_%d-%d", ep.ID, batch[0].EventSeq, batch[len(batch)-1].EventSeq)
		parts := make([][]byte, len(batch))
		for i, dl := range batch {
			parts[i] = dl.Payload
		}
		body = append(append([]byte{'['}, bytes.Join(parts, []byte{','})...), ']')
	}
	now := d.cfg.Now()
	status, err := d.post(ctx, ep.URL, key, id, now, body)
	if err != nil && ctx.Err() != nil {
		return nil // shutting down: the delivery stays due for the next leader
	}
	ids := make([]int64, len(batch))
	oldest := batch[0].CreatedAt
	for i, dl := range batch {
		ids[i] = dl.ID
		if dl.CreatedAt.Before(oldest) {
			oldest = dl.CreatedAt
		}
	}
	try := d.judge(now, oldest, batch[0].Attempts, status, err)
	d.countTry(ep.ID, try)
	if try.State == store.WebhookFailed {
		d.log.Warn("webhooks: a delivery was given up", "endpoint", ep.ID, "webhookId", id, "status", status, "err", err)
	}
	return d.st.RecordWebhookTry(ctx, ids, try)
}

// judge is what a try's answer makes of its deliveries: done on 2xx, else
// tried again after the backoff until the retry window since the oldest
// was recorded has passed; the last try falls at the window's end.
func (d *Dispatcher) judge(now, oldest time.Time, attempts, status int, err error) store.WebhookTry {
	try := store.WebhookTry{At: now, State: store.WebhookDone, Status: status}
	if err == nil {
		return try
	}
	try.Error = err.Error()
	deadline := oldest.Add(d.cfg.RetryFor)
	if !now.Before(deadline) {
		try.State = store.WebhookFailed
		return try
	}
	try.State = store.WebhookPending
	try.NextAt = now.Add(min(max(d.cfg.backoff(attempts), time.Millisecond), deadline.Sub(now)))
	return try
}

// post sends body signed as id at now, reads at most MaxResponseBytes of
// the answer, and returns its status; an error for anything but 2xx.
func (d *Dispatcher) post(ctx context.Context, endpoint string, key []byte, id string, now time.Time, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	if d.cfg.Header != nil {
		d.cfg.Header(ctx, req.Header)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "amsg-webhooks")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", timestampHeader(now))
	req.Header.Set("webhook-signature", Sign(key, id, now, body))
	resp, err := d.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may carry the receiver's token: keep it out of errors and logs
		}
		return 0, err
	}
	defer resp.Body.Close()
	// Read a little so the connection may be reused; never more.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, d.cfg.MaxResponseBytes))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return resp.StatusCode, nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return resp.StatusCode, fmt.Errorf("status %d: redirects are not followed", resp.StatusCode)
	}
	return resp.StatusCode, fmt.Errorf("status %d", resp.StatusCode)
}
