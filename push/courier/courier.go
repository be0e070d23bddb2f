// Package courier is amsg's one delivery engine. Every producer (the instant
// and continue rounds, the scheduler, test-push, the operator's send) hands
// it a round of pushes: the courier records them in the outbox (before any
// leaves, or, for pushes a retry rebuilds exactly, with their delivery),
// resolves the round's recipients once (a user's devices stay in memory
// while pushes to that user are in flight), encrypts and sends through the
// sender within per-user and per-origin bounds, and records the attempts,
// the gone devices and the delivered marks in one store write per push,
// which the store group-commits with the writes of other deliveries (or
// hands that write to the producer, to make with its own).
package courier

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"amsg/push"
	"amsg/push/notifytext"
	"amsg/push/receipt"
	"amsg/push/webpush"
)

// Store is the database as the courier uses it; *store.Store is one.
type Store interface {
	// Devices returns the user's subscriptions, decrypted.
	Devices(ctx context.Context, userID string) ([]push.Device, error)
	// AppendOutbox records pushes before they are sent.
	AppendOutbox(ctx context.Context, userID string, messages []push.OutboxMessage) error
	// BurstOutbox returns the user's recorded pushes whose message ids
	// start with idPrefix, oldest first.
	BurstOutbox(ctx context.Context, userID, idPrefix string) ([]push.OutboxEntry, error)
	// DiscardUndeliveredBurst deletes those of them that were neither
	// delivered nor acknowledged.
	DiscardUndeliveredBurst(ctx context.Context, userID, idPrefix string) (int, error)
	// RecordDeliveries writes what one push's delivery did, in one
	// transaction.
	RecordDeliveries(ctx context.Context, b push.Bookkeeping) error
}

// Sender sends one message to one subscription; *webpush.Sender is one.
type Sender interface {
	Send(ctx context.Context, sub push.Subscription, msg webpush.Message) (webpush.Delivery, error)
}

// ErrNoRecipients means the round has nobody to send to: the user has no
// push subscription and the request carried none. Producers report it as
// PUSH_SUBSCRIPTION_MISSING.
var ErrNoRecipients = errors.New("the user has no push subscription")

// Policy decides which pushes go by Web Push (AMSG_PUSH_POLICY).
type Policy string

// Policies.
const (
	// PolicyVisible sends only pushes the service worker shows: a reasoning
	// push is recorded in the outbox (and streamed by SSE) but never sent,
	// and the device whose SSE stream delivered a push gets no Web Push copy
	// of it (Outgoing.Streamed), since iOS revokes subscriptions that
	// receive pushes showing nothing and a copy of what the page shows is
	// one.
	PolicyVisible Policy = "visible"
	// PolicyUpstream sends every push, as the ReiStandard's server does,
	// the Web Push backup of every streamed frame included.
	PolicyUpstream Policy = "upstream"
)

// ParsePolicy reads a policy name; "" is PolicyVisible.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case "":
		return PolicyVisible, nil
	case PolicyVisible, PolicyUpstream:
		return p, nil
	}
	return "", fmt.Errorf("push policy %q is neither %q nor %q", s, PolicyVisible, PolicyUpstream)
}

// MarshalText and UnmarshalText make a Policy a flag (flag.TextVar).
func (p Policy) MarshalText() ([]byte, error) { return []byte(p), nil }

// UnmarshalText reads a policy name with ParsePolicy.
func (p *Policy) UnmarshalText(b []byte) error {
	v, err := ParsePolicy(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Sends reports whether a push of kind goes by Web Push under p.
func (p Policy) Sends(kind push.Kind) bool {
	return p == PolicyUpstream || kind != push.KindReasoning
}

// Defaults of Config.
const (
	DefaultPerUser   = 4
	DefaultPerOrigin = 32
	// DefaultDeviceMaxAge bounds how long a user's devices are reused from
	// memory before they are read again; Forget drops them sooner when the
	// API changes them.
	DefaultDeviceMaxAge = 10 * time.Second
)

// bookkeepingTimeout bounds the writes after a send, which run even if the
// caller's context ended meanwhile: the push went out either way.
const bookkeepingTimeout = 10 * time.Second

// Config configures a Courier. Zero values take the defaults.
type Config struct {
	// PerUser bounds the sends in flight to one user's devices, so one user
	// whose push service hangs cannot hold every delivery.
	PerUser int
	// PerOrigin bounds the requests in flight to one push service origin;
	// the default matches the sender's idle connections per host, so a
	// burst reuses its TLS connections instead of opening new ones.
	PerOrigin    int
	DeviceMaxAge time.Duration
	Policy       Policy // "": PolicyVisible
	// Localize returns a payload with the notification texts amsg wrote in
	// it in the language of tag (builders.Localize): what a device that
	// reported a language other than English gets. nil sends every device
	// the payload as it is.
	Localize func(payload []byte, tag string) ([]byte, error)
	// Receipts, when set, stamps each push to a stored device with its
	// receipt token (withReceipt); nil sends payloads as built.
	Receipts *receipt.Signer
	Logger   *slog.Logger
	Now      func() time.Time
	// Sleep waits between tries of a failed bookkeeping write; nil is
	// push.Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Courier delivers rounds of pushes. It is safe for concurrent use; make one
// per process.
type Courier struct {
	sender  Sender
	metrics metrics
	store   Store
	cfg     Config
	log     *slog.Logger
	users   *limiter
	origins *limiter
	devices *deviceCache
	backups *backups // the SSE rounds' queues (backup.go)
}

// New makes a Courier.
func New(sender Sender, st Store, cfg Config) *Courier {
	cfg.PerUser = cmp.Or(max(cfg.PerUser, 0), DefaultPerUser)
	cfg.PerOrigin = cmp.Or(max(cfg.PerOrigin, 0), DefaultPerOrigin)
	cfg.DeviceMaxAge = cmp.Or(max(cfg.DeviceMaxAge, 0), DefaultDeviceMaxAge)
	cfg.Policy = cmp.Or(cfg.Policy, PolicyVisible)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = push.Sleep
	}
	return &Courier{
		sender: sender, store: st, cfg: cfg, log: cfg.Logger, metrics: newMetrics(),
		users:   newLimiter(cfg.PerUser),
		origins: newSlowLimiter(cfg.PerOrigin, cfg.Now),
		devices: newDeviceCache(st, cfg.DeviceMaxAge, cfg.Now),
		backups: newBackups(),
	}
}

// Recipients are who a round's pushes go to.
type Recipients struct {
	// UserID names a user whose every device gets the pushes, and whose
	// outbox records them; "" for none.
	UserID string
	// Subscription is one more subscription that is not a stored device
	// (an /instant request's own); nil for none. It is also the round's
	// streaming device: the one whose SSE stream carries the round.
	Subscription *push.Subscription
	// OutboxOnly withholds every push of the round from Web Push, as the
	// policy withholds reasoning: they are recorded in the outbox only (the
	// user's daily limit is spent).
	OutboxOnly bool
	// Except is a device of the user that the round leaves out (the one
	// that answered an approval itself); 0 for none.
	Except int64
}

// Result says what happened to one push at each recipient.
type Result struct {
	MessageID string
	// Withheld is set when the policy or OutboxOnly kept the push off Web Push; it was
	// recorded in the outbox and nothing was sent.
	Withheld bool
	// Streamed is set when the round's streaming device got no Web Push
	// copy because its stream delivered the push.
	Streamed bool
	Devices  []DeviceResult // the request's subscription first, then the user's devices
}

// DeviceResult is one recipient's delivery.
type DeviceResult struct {
	DeviceID int64 // 0 for the request's own subscription
	webpush.Delivery
}

// Delivered counts the recipients the push reached.
func (r Result) Delivered() int {
	n := 0
	for _, d := range r.Devices {
		if d.Outcome == push.OutcomeDelivered {
			n++
		}
	}
	return n
}

// Round is a run of pushes to one set of recipients: an LLM round's
// reasoning and content, a scheduled occurrence's burst, a single test or
// operator push. Its recipients are resolved once, when it opens.
type Round struct {
	c         *Courier
	to        Recipients
	source    push.Source
	devices   *userDevices // nil without a user
	streaming string       // the endpoint of to.Subscription, even when it is one of the devices
}

// Open starts a round to to, whose pushes are of source (instant or
// scheduled: it picks TTL and urgency). It reads the user's devices, unless
// they were read less than DeviceMaxAge ago. A round with nobody to send to
// (Reachable false) still records its pushes in the user's outbox; its
// sends fail with ErrNoRecipients.
func (c *Courier) Open(ctx context.Context, to Recipients, source push.Source) (*Round, error) {
	r := &Round{c: c, to: to, source: source}
	if to.Subscription != nil {
		r.streaming = to.Subscription.Endpoint
	}
	if to.UserID != "" {
		d, err := c.devices.acquire(ctx, to.UserID)
		if err != nil {
			return nil, fmt.Errorf("list push subscriptions: %w", err)
		}
		r.devices = d
		for _, dev := range d.list() {
			if to.Subscription != nil && dev.Subscription.Endpoint == to.Subscription.Endpoint {
				r.to.Subscription = nil // one of the user's devices already: sent once
			}
		}
	}
	return r, nil
}

// Reachable reports whether the round has a recipient: the request's
// subscription, or a device of the user.
func (r *Round) Reachable() bool {
	return r.to.Subscription != nil || (r.devices != nil && len(r.devices.list()) > 0)
}

// Record writes pushes to the user's outbox before any is sent, so a page
// that was offline catches up and a retried occurrence resends the same
// pushes. Without a user there is no outbox and Record does nothing.
func (r *Round) Record(ctx context.Context, messages []push.OutboxMessage) error {
	if r.to.UserID == "" || len(messages) == 0 {
		return nil
	}
	if err := r.c.store.AppendOutbox(ctx, r.to.UserID, messages); err != nil {
		return fmt.Errorf("record pushes in the outbox: %w", err)
	}
	return nil
}

// Outgoing is one push of a producer's burst.
type Outgoing struct {
	push.OutboxMessage
	Kind push.Kind
	// Recorded: the outbox holds the push already (Record, or an earlier
	// round). Deliver records one that it does not with its delivery.
	Recorded bool
	// Delivered: a push service took it in an earlier round.
	Delivered bool
	// Streamed: the round's SSE stream delivered it to the streaming
	// device, which under PolicyVisible gets no Web Push copy.
	Streamed bool
	// TTL and Urgency override the source's and the kind's when set.
	TTL     time.Duration
	Urgency webpush.Urgency
}

// Recorded returns the pushes recorded for the round's user whose message
// ids start with idPrefix (a burst's), oldest first, and whether any was
// delivered: a scheduled occurrence resends its burst from here rather
// than building it again. A row that no longer decodes makes the burst
// unusable: nil, with a warning.
func (r *Round) Recorded(ctx context.Context, idPrefix string) (burst []Outgoing, started bool, err error) {
	entries, err := r.c.store.BurstOutbox(ctx, r.to.UserID, idPrefix)
	if err != nil {
		return nil, false, fmt.Errorf("read the burst's outbox: %w", err)
	}
	for _, e := range entries {
		p, err := push.Decode(e.Payload)
		if err != nil {
			r.c.log.WarnContext(ctx, "courier: a recorded push does not decode; the burst is built afresh", "messageId", e.MessageID, "err", err)
			return nil, false, nil
		}
		delivered := !e.DeliveredAt.IsZero()
		started = started || delivered
		burst = append(burst, Outgoing{OutboxMessage: e.OutboxMessage, Kind: p.Kind(), Recorded: true, Delivered: delivered})
	}
	return burst, started, nil
}

// Discard deletes the recorded pushes whose ids start with idPrefix that
// no push service took, so the burst's next round builds them afresh.
func (r *Round) Discard(ctx context.Context, idPrefix string) error {
	if _, err := r.c.store.DiscardUndeliveredBurst(ctx, r.to.UserID, idPrefix); err != nil {
		return fmt.Errorf("discard the burst's undelivered pushes: %w", err)
	}
	return nil
}

// Push records p in the outbox and sends it: the instant paths' one call
// per push. An outbox that cannot be written is logged, not fatal: the
// push still goes.
func (r *Round) Push(ctx context.Context, p push.Push) (Result, error) {
	return r.push(ctx, p, false)
}

// PushStreamed is Push for a push the round's SSE stream delivered to its
// streaming device (Recipients.Subscription): under PolicyVisible that
// device gets no Web Push copy, the user's other devices do.
func (r *Round) PushStreamed(ctx context.Context, p push.Push) (Result, error) {
	return r.push(ctx, p, true)
}

func (r *Round) push(ctx context.Context, p push.Push, streamed bool) (Result, error) {
	m, err := push.NewOutboxMessage(p)
	if err != nil {
		return Result{}, err
	}
	if err := r.Record(ctx, []push.OutboxMessage{m}); err != nil {
		r.c.log.WarnContext(ctx, "courier: sending a push the outbox could not record", "messageId", m.MessageID, "err", err)
	}
	o := Outgoing{OutboxMessage: m, Kind: p.Kind(), Recorded: true, Streamed: streamed}
	o.TTL, o.Urgency = approvalDelivery(p, r.c.cfg.Now())
	return r.Deliver(ctx, o)
}

// Send delivers one recorded push to every recipient at once and records
// the attempts, the gone devices and, when a recipient took it, the outbox
// mark. The error is for a push that could not be sent at all (invalid, or
// too large even for chunks, push.ErrPayloadTooLarge); per recipient
// outcomes are in the Result.
func (r *Round) Send(ctx context.Context, m push.OutboxMessage, kind push.Kind) (Result, error) {
	return r.Deliver(ctx, Outgoing{OutboxMessage: m, Kind: kind, Recorded: true})
}

// Deliver is Send for one push of a burst. A push the outbox does not hold
// yet (not o.Recorded) is recorded in the write that records its delivery,
// delivered, rather than in a write of its own before it leaves: for pushes
// a retry rebuilds exactly (a scheduled fixed occurrence: the same text
// under the same ids), which lose nothing when the process dies between
// the send and the write. Such a push that reached nobody is recorded
// undelivered, and one to a device that may complete it from the outbox
// (webpush.CompletedFromOutbox) is recorded before it is sent.
func (r *Round) Deliver(ctx context.Context, o Outgoing) (Result, error) {
	res, held, err := r.deliver(ctx, o)
	if err == nil {
		r.c.Keep(ctx, held)
	}
	return res, err
}

// DeliverLast is Deliver for the last push of a producer that writes a
// completion of its own (a scheduled occurrence's): when a recipient took
// the push, its bookkeeping is returned instead of written, for the
// producer to write in the same transaction as its completion (one write
// instead of two), or to hand to Courier.Keep when it cannot.
func (r *Round) DeliverLast(ctx context.Context, o Outgoing) (Result, push.Bookkeeping, error) {
	res, held, err := r.deliver(ctx, o)
	if err != nil || res.Delivered() == 0 {
		r.c.Keep(ctx, held)
		held = push.Bookkeeping{}
	}
	return res, held, err
}

// Keep writes a push's bookkeeping, retrying a failed write for up to
// KeepBound. The push went out, so a write that still fails is logged and
// not returned: failing now would only make a producer send it again.
func (c *Courier) Keep(ctx context.Context, b push.Bookkeeping) {
	if b.Empty() {
		return
	}
	err := RetryWrite(ctx, KeepBound, c.cfg.Sleep, c.log, slog.String("messageId", b.MessageID()), "recording a push's delivery",
		func(ctx context.Context) error { return c.store.RecordDeliveries(ctx, b) })
	if err != nil {
		c.log.ErrorContext(ctx, "courier: could not record a push's delivery", "messageId", b.MessageID(),
			"attempts", len(b.Attempts), "err", err.Error())
	}
}

// deliver sends o and returns its bookkeeping, unwritten.
func (r *Round) deliver(ctx context.Context, o Outgoing) (Result, push.Bookkeeping, error) {
	res := Result{MessageID: o.MessageID}
	if !r.c.cfg.Policy.Sends(o.Kind) || r.to.OutboxOnly {
		res.Withheld = true
		var held push.Bookkeeping
		if r.to.OutboxOnly && r.to.UserID != "" {
			held = push.Bookkeeping{UserID: r.to.UserID, Deferred: []string{o.MessageID}}
		}
		if o.Recorded {
			return res, held, nil
		}
		return res, held, r.Record(ctx, []push.OutboxMessage{o.OutboxMessage})
	}
	skip := ""
	if o.Streamed && r.c.cfg.Policy == PolicyVisible {
		skip = r.streaming
	}
	subs, languages := r.subscriptions(&res, skip)
	if res.Streamed {
		r.c.metrics.streamSkips.Inc()
		if len(subs) == 0 {
			return res, push.Bookkeeping{}, nil
		}
	}
	if len(subs) == 0 {
		return res, push.Bookkeeping{}, ErrNoRecipients
	}
	if !o.Recorded && slices.ContainsFunc(subs, func(s push.Subscription) bool { return webpush.CompletedFromOutbox(s.Endpoint) }) {
		if err := r.Record(ctx, []push.OutboxMessage{o.OutboxMessage}); err != nil {
			return res, push.Bookkeeping{}, err
		}
		o.Recorded = true
	}
	msg := webpush.Message{ID: o.MessageID, Kind: o.Kind, Payload: o.Payload, Source: r.source, TTL: o.TTL, Urgency: o.Urgency}
	msgs := r.c.localized(ctx, msg, languages)
	msgFor := func(i int) webpush.Message {
		m := msg
		if msgs != nil {
			m = msgs[i]
		}
		return r.c.withReceipt(m, r.to.UserID, res.Devices[i].DeviceID)
	}
	errs := make([]error, len(subs))
	if len(subs) == 1 {
		// Most users have one device: sending on this goroutine spares a
		// goroutine and a wake-up per push.
		res.Devices[0].Delivery, errs[0] = r.c.send(ctx, r.to.UserID, subs[0], msgFor(0))
	} else {
		var wg sync.WaitGroup
		for i, sub := range subs {
			wg.Go(func() { res.Devices[i].Delivery, errs[i] = r.c.send(ctx, r.to.UserID, sub, msgFor(i)) })
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return res, push.Bookkeeping{}, err
		}
	}
	if !o.Recorded && res.Delivered() == 0 {
		// Kept for a page that catches up, as a recorded push would be.
		if err := r.Record(ctx, []push.OutboxMessage{o.OutboxMessage}); err != nil {
			r.c.log.WarnContext(ctx, "courier: could not record an undelivered push", "messageId", o.MessageID, "err", err)
		}
		o.Recorded = true
	}
	return res, r.bookkeeping(o, &res), nil
}

// subscriptions lists the round's recipients and their languages, the
// request's subscription first (its language unknown), and gives res a
// DeviceResult for each, in the same order. The subscription whose
// endpoint is skip is left out, and res.Streamed set.
func (r *Round) subscriptions(res *Result, skip string) (subs []push.Subscription, languages []string) {
	if r.to.Subscription != nil {
		if skip != "" && r.to.Subscription.Endpoint == skip {
			res.Streamed = true
		} else {
			subs = append(subs, *r.to.Subscription)
			languages = append(languages, "")
			res.Devices = append(res.Devices, DeviceResult{})
		}
	}
	if r.devices != nil {
		for _, d := range r.devices.list() {
			if d.ID == r.to.Except {
				continue
			}
			if skip != "" && d.Subscription.Endpoint == skip {
				res.Streamed = true
				continue
			}
			subs = append(subs, d.Subscription)
			languages = append(languages, d.Language)
			res.Devices = append(res.Devices, DeviceResult{DeviceID: d.ID})
		}
	}
	return subs, languages
}

// localized returns the message each recipient gets: msg, its payload in
// the recipient's language (Config.Localize) when that is not English, made
// once per language. It returns nil, to mean msg for all, when no
// recipient needs another language: the usual round costs nothing.
func (c *Courier) localized(ctx context.Context, msg webpush.Message, languages []string) []webpush.Message {
	if c.cfg.Localize == nil {
		return nil
	}
	var msgs []webpush.Message
	var payloads map[string][]byte
	for i, tag := range languages {
		lang := notifytext.Language(tag)
		if lang == notifytext.English {
			continue
		}
		if msgs == nil {
			msgs = make([]webpush.Message, len(languages))
			for j := range msgs {
				msgs[j] = msg
			}
			payloads = map[string][]byte{}
		}
		payload, ok := payloads[lang]
		if !ok {
			var err error
			if payload, err = c.cfg.Localize(msg.Payload, lang); err != nil {
				c.log.WarnContext(ctx, "courier: could not localize a push; it goes as it is", "messageId", msg.ID, "language", lang, "err", err)
				payload = msg.Payload
			}
			payloads[lang] = payload
		}
		msgs[i].Payload = payload
	}
	return msgs
}

// send sends to one subscription within the user's and the origin's
// bounds. The origin's slot is held per request, not across the sender's
// retry waits (issue 22: a send that held it through a backoff slowed every
// user of a push service that answered 5xx or 429 45×).
func (c *Courier) send(ctx context.Context, userID string, sub push.Subscription, msg webpush.Message) (webpush.Delivery, error) {
	if userID != "" {
		if err := c.users.acquire(ctx, userID); err != nil {
			return webpush.Delivery{Outcome: push.OutcomeFailed, Err: err}, nil
		}
		defer c.users.release(userID)
	}
	msg.Gate = originGate{c.origins, originOf(sub.Endpoint)}
	return c.sender.Send(ctx, sub, msg)
}

// originGate is one push service origin's slots as the sender's Gate.
type originGate struct {
	l      *limiter
	origin string
}

func (g originGate) Enter(ctx context.Context) error { return g.l.acquire(ctx, g.origin) }
func (g originGate) Leave()                          { g.l.release(g.origin) }

// originOf is the push service an endpoint belongs to: scheme and host,
// the endpoint up to its path, without parsing it (once a push). An
// endpoint without a scheme shares one key; the sender refuses it anyway.
func originOf(endpoint string) string {
	scheme, rest, ok := strings.Cut(endpoint, "://")
	if !ok {
		return ""
	}
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	return endpoint[:len(scheme)+len("://")+len(rest)]
}

// bookkeeping is what the delivery of o left to write: the attempts, the
// gone devices, and the outbox mark, or the outbox row of a push recorded
// only now that a recipient took it.
func (r *Round) bookkeeping(o Outgoing, res *Result) push.Bookkeeping {
	b := push.Bookkeeping{UserID: r.to.UserID}
	delivered := false
	for i := range res.Devices {
		d := &res.Devices[i]
		for j := range d.Attempts {
			d.Attempts[j].UserID, d.Attempts[j].DeviceID = r.to.UserID, d.DeviceID
		}
		b.Attempts = append(b.Attempts, d.Attempts...)
		delivered = delivered || d.Outcome == push.OutcomeDelivered
		if d.Outcome == push.OutcomeGone && d.DeviceID != 0 {
			b.Gone = append(b.Gone, d.DeviceID)
		}
	}
	switch {
	case !delivered || r.to.UserID == "":
	case o.Recorded:
		b.Delivered = []string{o.MessageID}
	default:
		b.Record = []push.OutboxMessage{o.OutboxMessage}
	}
	if len(b.Gone) > 0 {
		r.devices.drop(b.Gone)
	}
	return b
}

// SendPush sends one push to every device of userID as a round of its own
// and reports each device's outcome: test-push's and the operator's send.
// The push is recorded in the user's outbox first.
func (c *Courier) SendPush(ctx context.Context, userID string, source push.Source, p push.Push) (Result, error) {
	r, err := c.Open(ctx, Recipients{UserID: userID}, source)
	if err != nil {
		return Result{MessageID: p.CommonFields().MessageID}, err
	}
	if !r.Reachable() {
		return Result{MessageID: p.CommonFields().MessageID}, ErrNoRecipients
	}
	return r.Push(ctx, p)
}
