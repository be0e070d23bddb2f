// Package webpush delivers pushes to browser push services: VAPID keys,
// subscription checks, RFC 8291 encryption and RFC 8292 VAPID on the
// standard library with one signed token per push-service origin, the RFC
// 8030 headers chosen per kind and source, the status policy with bounded
// retries, `_multipart` chunking of oversized pushes (one cut visible push
// for Apple's service instead), fan-out to every device of a user, and
// metrics.
package webpush

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http2/hpack"

	"amsg/push"
	"amsg/push/netguard"
	"amsg/push/tracing"
	"amsg/push/webpush/h2"
)

// Urgency is the RFC 8030 Urgency header.
type Urgency string

// Urgencies.
const (
	UrgencyVeryLow Urgency = "very-low"
	UrgencyLow     Urgency = "low"
	UrgencyNormal  Urgency = "normal"
	UrgencyHigh    Urgency = "high"
)

// TTLs a push service may hold a message for a device that is offline.
// An instant reply is worth minutes: the page's stream and the outbox carry
// it too, and a phone in a low-power state may take a few minutes to wake.
// A scheduled push is worth as long as the scheduler's stale guard would
// still fire it (an hour late); after that a check-in does harm. MaxTTL is
// the longest any push service keeps a message (FCM's four weeks).
const (
	InstantTTL   = 10 * time.Minute
	ScheduledTTL = time.Hour
	MaxTTL       = 28 * 24 * time.Hour
)

// maxChunkBytes is the largest ChunkBytes whose chunks still fit the
// plaintext budget in the worst case (index 128, a 28-day ttlMs); a test
// pins it.
const maxChunkBytes = 2700

// ErrInvalidMessage is what a producer's mistake in a Message matches.
var ErrInvalidMessage = errors.New("invalid push message")

// Message is one encoded push to deliver.
type Message struct {
	ID      string    // the push's messageId, for the delivery log
	Kind    push.Kind // the push's messageKind; chunks carry it as originalMessageKind
	Payload []byte    // the push's encoded JSON, as the service worker will see it
	// Source picks the default TTL: InstantTTL or ScheduledTTL.
	Source push.Source
	TTL    time.Duration // overrides the source's TTL; at most MaxTTL
	// Urgency overrides the kind's (see urgencyOf).
	Urgency Urgency
	// Topic lets the push service replace an undelivered message with the
	// same topic (RFC 8030 §5.4: up to 32 base64url characters). Empty
	// means TopicOf(ID), so only retries of this very push collapse. The
	// chunks of an oversized push each get their own topic derived from it
	// (chunkTopic), so they never replace each other.
	Topic string
	// Gate, when set, is entered around each request of the send, not
	// across its retry waits.
	Gate Gate
}

// Config configures a Sender. Zero values take the defaults shown.
type Config struct {
	VAPIDPublicKey  string // base64url 65-byte point
	VAPIDPrivateKey string // base64url 32-byte scalar
	// Subject is the VAPID contact: an e-mail address, with or without
	// mailto:, or an https URL (AMSG_VAPID_SUBJECT).
	Subject string
	// AllowPrivateEndpoints admits http endpoints and loopback or private
	// addresses (AMSG_ALLOW_PRIVATE_ENDPOINTS; development and tests only).
	AllowPrivateEndpoints bool

	Timeout time.Duration // per HTTP request, connection included; default 30 s
	// HungAfter requests in a row to one push service origin that timed out
	// give its next requests HungTimeout instead of Timeout, until one gets
	// an answer; defaults DefaultHungAfter and DefaultHungTimeout.
	HungAfter   int
	HungTimeout time.Duration
	// PadTo pads every encrypted body up to this many bytes (at most 4096)
	// so its size says less about its content; 0 sends bodies at their
	// natural size (webpush-go would pad all of them to 4096).
	PadTo int
	// InlineBudget is the largest push JSON sent as one message; larger ones
	// go as `_multipart` chunks. Default and maximum push.MaxPayloadBytes.
	InlineBudget int
	// ChunkBytes is how many bytes of the push each chunk carries; default
	// push.DefaultMultipartChunkBytes, at most 2700.
	ChunkBytes int
	// MaxConnsPerHost bounds the connections to one push service, idle ones
	// included; size it to the requests in flight, or requests beyond the
	// idle pool re-open TLS connections. Default 256.
	MaxConnsPerHost int
	// Resolver resolves endpoint hosts before the dial policy sees the
	// addresses; nil is the system's. Tests point a stand-in host (such
	// as Apple's) at a local push service with it.
	Resolver netguard.Resolver
	// RootCAs are the authorities push services' certificates are checked
	// against; nil is the system's. Tests trust a local push service with it.
	RootCAs *x509.CertPool
	// NetHTTPOnly sends every request through net/http's client instead of
	// the sender's own HTTP/2 client (package h2) for push services that
	// speak h2: the operator's way out should a push service disagree with
	// it (AMSG_PUSH_NET_HTTP).
	NetHTTPOnly bool

	MaxAttempts  int           // HTTP attempts per request before giving up; default 4
	MaxRetryWait time.Duration // total wait between retries for one message and device; default 30 s
	BaseBackoff  time.Duration // first wait when the service names none; default 500 ms
	MaxBackoff   time.Duration // default 8 s

	Registerer prometheus.Registerer // nil: metrics are kept but not exported
	Logger     *slog.Logger          // nil: slog.Default()
	Now        func() time.Time      // default time.Now
	// Sleep waits between retries; default push.Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a random duration in [0, n); default uniform.
	Jitter func(n time.Duration) time.Duration
}

// Sender delivers messages to push subscriptions. It is safe for concurrent
// use; make one per process, since it holds the shared HTTP transport.
type Sender struct {
	cfg       Config
	policy    EndpointPolicy
	transport *http.Transport
	h2        *h2.Client // nil with Config.NetHTTPOnly
	signer    *vapidSigner
	subject   string // the JWT's sub claim
	log       *slog.Logger
	metrics   *metrics
	hangs     *hangBreaker
}

// NewSender checks cfg and builds a Sender.
func NewSender(cfg Config) (*Sender, error) {
	pub, priv, err := parseVAPIDKeys(cfg.VAPIDPublicKey, cfg.VAPIDPrivateKey)
	if err != nil {
		return nil, err
	}
	sub, err := NormalizeSubject(cfg.Subject)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = cmp.Or(cfg.Timeout, 30*time.Second)
	cfg.HungAfter = cmp.Or(cfg.HungAfter, DefaultHungAfter)
	cfg.HungTimeout = cmp.Or(cfg.HungTimeout, DefaultHungTimeout)
	cfg.InlineBudget = cmp.Or(cfg.InlineBudget, push.MaxPayloadBytes)
	cfg.ChunkBytes = cmp.Or(cfg.ChunkBytes, push.DefaultMultipartChunkBytes)
	cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, 4)
	cfg.MaxRetryWait = cmp.Or(cfg.MaxRetryWait, 30*time.Second)
	cfg.BaseBackoff = cmp.Or(cfg.BaseBackoff, 500*time.Millisecond)
	cfg.MaxBackoff = cmp.Or(cfg.MaxBackoff, 8*time.Second)
	cfg.MaxConnsPerHost = cmp.Or(cfg.MaxConnsPerHost, 256)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = push.Sleep
	}
	if cfg.Jitter == nil {
		cfg.Jitter = uniformJitter
	}
	switch {
	case cfg.InlineBudget < 0 || cfg.InlineBudget > push.MaxPayloadBytes:
		return nil, fmt.Errorf("webpush: InlineBudget %d is outside 1..%d", cfg.InlineBudget, push.MaxPayloadBytes)
	case cfg.ChunkBytes < 0 || cfg.ChunkBytes > maxChunkBytes:
		return nil, fmt.Errorf("webpush: ChunkBytes %d is outside 1..%d", cfg.ChunkBytes, maxChunkBytes)
	case cfg.PadTo < 0 || cfg.PadTo > push.MaxEncryptedBytes:
		return nil, fmt.Errorf("webpush: PadTo %d is outside 0..%d", cfg.PadTo, push.MaxEncryptedBytes)
	case cfg.Timeout < 0 || cfg.MaxAttempts < 0 || cfg.MaxRetryWait < 0 || cfg.BaseBackoff < 0 || cfg.MaxBackoff < 0 ||
		cfg.MaxConnsPerHost < 0:
		return nil, errors.New("webpush: Timeout, MaxAttempts, MaxRetryWait, BaseBackoff, MaxBackoff and MaxConnsPerHost must not be negative")
	}
	signer, err := newVAPIDSigner(pub, priv, sub, cfg.Now)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	policy := EndpointPolicy{AllowPrivate: cfg.AllowPrivateEndpoints, Resolver: cfg.Resolver}
	s := &Sender{
		cfg:       cfg,
		policy:    policy,
		transport: newTransport(policy, cfg),
		hangs:     newHangBreaker(cfg.HungAfter, cfg.HungTimeout),
		signer:    signer,
		subject:   sub,
		log:       cfg.Logger,
		metrics:   m,
	}
	if !cfg.NetHTTPOnly {
		s.h2 = h2.New(h2.Config{Dial: s.transport.DialContext, TLS: s.transport.TLSClientConfig,
			HandshakeTimeout: s.transport.TLSHandshakeTimeout, MaxConnsPerHost: cfg.MaxConnsPerHost,
			IdleTimeout: s.transport.IdleConnTimeout, BodySnippet: maxBodySnippet})
	}
	if !s.AppleSubjectOK() {
		cfg.Logger.Warn("the VAPID subject is a placeholder that Apple's push service rejects; pushes to Apple devices "+
			"(iPhone, iPad, Safari) are refused until --vapid-subject / AMSG_VAPID_SUBJECT names a real contact",
			"subject", sub)
	}
	return s, nil
}

// AppleSubjectOK reports whether the VAPID subject is one Apple's push
// service accepts. When it is not, sends to Apple endpoints fail with
// OutcomeConfigError and the devices stay.
func (s *Sender) AppleSubjectOK() bool { return !placeholderSubject(s.subject) }

func uniformJitter(n time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	return rand.N(n)
}

// newTransport is the net/http transport for push services that do not
// speak h2 (and for all with Config.NetHTTPOnly): keep-alive connections
// pooled up to MaxConnsPerHost, bounded waits, no proxy (it would hide the
// address the policy must see), and a dialer that applies the endpoint policy
// to the resolved address. The sender makes its requests on the transport
// itself (post), so no redirect is ever followed: a push service never
// needs one, and following one would let an endpoint point us anywhere.
// The h2 client shares its dial, TLS and timeouts.
func newTransport(policy EndpointPolicy, cfg Config) *http.Transport {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: policy.dialControl}
	return &http.Transport{
		DialContext:           netguard.Dial(dialer, cfg.Resolver),
		TLSClientConfig:       &tls.Config{RootCAs: cfg.RootCAs},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4 * cfg.MaxConnsPerHost,
		MaxIdleConnsPerHost:   cfg.MaxConnsPerHost,
		MaxConnsPerHost:       cfg.MaxConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// Delivery is what happened to one message at one subscription.
type Delivery struct {
	Outcome  push.Outcome
	Status   int    // the last HTTP status; 0 if no response arrived
	Chunks   int    // how many `_multipart` chunks were sent; 0 when inline
	PushHost string // the endpoint's host, the only part of it fit to log
	Attempts []push.Attempt
	Err      error // why, when Outcome is not delivered

	// Cut says the push went to Apple's service as one push cut to the
	// budget, carrying `_truncated`, instead of as chunks.
	Cut bool
}

// Send delivers msg to one subscription, retrying as the status policy says.
// The error is for a Message that cannot be sent anywhere (invalid, or too
// large even for chunks); what happened at the subscription is in Delivery.
func (s *Sender) Send(ctx context.Context, sub push.Subscription, msg Message) (Delivery, error) {
	o, err := s.prepare(msg)
	if err != nil {
		return Delivery{}, err
	}
	ctx, span := tracing.Start(ctx, "push.send")
	d := s.deliver(ctx, sub, o)
	traceDelivery(span, d, msg)
	s.logDelivery(d, msg.ID)
	return d, nil
}

// outgoing is a Message checked once and shared by the sends to every
// device.
type outgoing struct {
	Message
	ttl     time.Duration
	ttlText string // the TTL header
	urgency Urgency
	inline  bool // within the inline budget

	chunkOnce sync.Once
	chunks    [][]byte
	chunkErr  error

	cutOnce sync.Once
	cut     []byte // the one visible push for Apple endpoints, when not inline
	cutErr  error
}

// urgencyOf is the RFC 8030 §5.3 urgency of a kind. Content is what the
// user waits for and the only push that always shows a notification: high,
// which wakes a phone at once (iOS delivers pushes late without it).
// Reasoning only accompanies content and is worth nothing on its own: low.
// A tool request holds its round until a device answers, and an error ends
// a round the user may be waiting on, but neither is the reply itself:
// normal, delivered promptly without forcing a sleeping phone awake.
func urgencyOf(k push.Kind) Urgency {
	switch k {
	case push.KindContent:
		return UrgencyHigh
	case push.KindReasoning:
		return UrgencyLow
	default:
		return UrgencyNormal
	}
}

// TopicOf is the default Topic of a push: the first 128 bits of the
// SHA-256 of its message ID in hex, 32 characters. Hex keeps to letters and
// digits, which every push service accepts (one Safari report leaves "_"
// in doubt), and a message ID is unique per push, so only retries of the
// same push replace each other.
func TopicOf(messageID string) string {
	sum := sha256.Sum256([]byte(messageID))
	return hex.EncodeToString(sum[:16])
}

// chunkTopic is the topic of chunk i of a push with the given topic:
// distinct per chunk, so the chunks of one set never replace each other,
// and stable, so a retry of a chunk replaces its own undelivered copy.
func chunkTopic(topic string, i int) string { return TopicOf(topic + "/" + strconv.Itoa(i)) }

func (s *Sender) prepare(msg Message) (*outgoing, error) {
	o := &outgoing{Message: msg, urgency: urgencyOf(msg.Kind)}
	switch msg.Source {
	case push.SourceInstant:
		o.ttl = InstantTTL
	case push.SourceScheduled:
		o.ttl = ScheduledTTL
	default:
		return nil, fmt.Errorf("%w: source %q is neither instant nor scheduled", ErrInvalidMessage, msg.Source)
	}
	switch {
	case msg.ID == "":
		return nil, fmt.Errorf("%w: the message ID is empty", ErrInvalidMessage)
	case msg.TTL < 0 || msg.TTL > MaxTTL:
		return nil, fmt.Errorf("%w: TTL %s is outside 0..%s", ErrInvalidMessage, msg.TTL, MaxTTL)
	case msg.Urgency != "" && msg.Urgency != UrgencyVeryLow && msg.Urgency != UrgencyLow &&
		msg.Urgency != UrgencyNormal && msg.Urgency != UrgencyHigh:
		return nil, fmt.Errorf("%w: urgency %q is not one of very-low, low, normal, high", ErrInvalidMessage, msg.Urgency)
	case !validTopic(msg.Topic):
		return nil, fmt.Errorf("%w: topic %q is not up to 32 base64url characters", ErrInvalidMessage, msg.Topic)
	}
	if msg.TTL > 0 {
		o.ttl = msg.TTL
	}
	if msg.Urgency != "" {
		o.urgency = msg.Urgency
	}
	o.Topic = cmp.Or(o.Topic, TopicOf(msg.ID))
	o.ttlText = strconv.FormatInt(int64(o.ttl/time.Second), 10)
	o.inline = len(msg.Payload) <= s.cfg.InlineBudget
	if !o.inline {
		if _, err := o.chunkPayloads(s); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func validTopic(t string) bool {
	if len(t) > 32 {
		return false
	}
	for _, c := range t {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// chunkPayloads splits the message once, however many devices need it.
// Chunks carry the message's TTL as ttlMs, so a set the push service held
// for an offline device is still whole when it arrives.
func (o *outgoing) chunkPayloads(s *Sender) ([][]byte, error) {
	o.chunkOnce.Do(func() {
		o.chunks, o.chunkErr = push.SplitMultipart(o.Payload, o.Kind, push.MultipartOptions{
			ChunkBytes: s.cfg.ChunkBytes, TTL: o.ttl, CreatedAt: s.cfg.Now(),
		})
		for _, c := range o.chunks {
			if len(c) > push.MaxPayloadBytes { // only a kind string of absurd length gets here
				o.chunks, o.chunkErr = nil, fmt.Errorf("%w: a chunk is %d bytes, over the %d-byte budget",
					ErrInvalidMessage, len(c), push.MaxPayloadBytes)
				break
			}
		}
		if o.chunkErr == nil {
			s.metrics.multipart.Inc()
		}
	})
	return o.chunks, o.chunkErr
}

// deliver sends a prepared message to one subscription: inline, or when
// too large as chunks (as one cut visible push to Apple's service, where
// chunks would show nothing), and as chunks after all when a push service
// other than Apple's refuses an inline body larger than a chunk with 413
// (some mobile services cap bodies near 3 KB).
func (s *Sender) deliver(ctx context.Context, sub push.Subscription, o *outgoing) Delivery {
	var d Delivery
	var keys uaKeys
	u, err := s.policy.parseEndpoint(sub.Endpoint)
	if err == nil {
		d.PushHost = u.Host
		keys, err = parseKeys(sub.Keys)
	}
	apple := err == nil && isApplePushHost(u.Hostname())
	if apple && !s.AppleSubjectOK() {
		err = errPlaceholderForApple
	}
	if err != nil {
		d.Outcome, d.Err = push.OutcomeFailed, err
		if errors.Is(err, errPlaceholderForApple) {
			d.Outcome = push.OutcomeConfigError // the server's fault: the device stays
		}
		s.metrics.delivery(d.Outcome)
		return d
	}
	if apple {
		s.metrics.apple.Inc()
	}
	r := &run{s: s, ctx: ctx, endpoint: sub.Endpoint, url: u, origin: originOf(u), keys: keys, o: o, d: &d}
	switch {
	case o.inline:
		r.sendAll([][]byte{o.Payload}, false)
		if !apple && d.Outcome == push.OutcomeTooLarge && len(o.Payload) > s.cfg.ChunkBytes {
			if chunks, err := o.chunkPayloads(s); err == nil {
				s.log.Info("push service refused an inline push as too large; sending it as chunks",
					"host", d.PushHost, "messageId", o.ID, "bytes", len(o.Payload), "chunks", len(chunks))
				r.sendAll(chunks, true)
			}
		}
	case apple:
		if cut, err := o.cutPayload(s); err == nil {
			r.sendAll([][]byte{cut}, false)
			d.Cut = true
		} else {
			r.sendAll(o.chunks, true) // not a content push: nothing to cut
		}
	default:
		r.sendAll(o.chunks, true)
	}
	s.metrics.delivery(d.Outcome)
	return d
}

// originOf is the RFC 6454 serialization of an endpoint's origin, the
// VAPID token's audience: lower-case host, default port left out.
func originOf(u *url.URL) string {
	host := strings.ToLower(u.Host)
	if p := u.Port(); u.Scheme == "https" && p == "443" || u.Scheme == "http" && p == "80" {
		host = strings.TrimSuffix(host, ":"+p)
	}
	return u.Scheme + "://" + host
}

// run is one message's delivery to one subscription.
type run struct {
	s        *Sender
	ctx      context.Context
	endpoint string
	url      *url.URL // endpoint, parsed once for every request
	origin   string   // the push service's origin, the VAPID token's audience
	keys     uaKeys
	o        *outgoing
	d        *Delivery
	waited   time.Duration // retry waits so far, against MaxRetryWait
}

// sendAll sends the payloads in order and stops at the first that fails;
// the service worker expires a set that stays incomplete.
func (r *run) sendAll(payloads [][]byte, chunked bool) {
	r.d.Chunks, r.d.Err = 0, nil
	for i, p := range payloads {
		label, topic := "", r.o.Topic
		if chunked {
			label, topic = fmt.Sprintf("chunk %d/%d: ", i+1, len(payloads)), chunkTopic(r.o.Topic, i)
		}
		if r.d.Outcome = r.send(p, topic, label); r.d.Outcome != push.OutcomeDelivered {
			return
		}
	}
	if chunked {
		r.d.Chunks = len(payloads)
	}
}

// send encrypts one payload and makes its request and retries, recording
// every attempt. Retries resend the same body.
func (r *run) send(payload []byte, topic, label string) push.Outcome {
	cfg := &r.s.cfg
	body, err := sealPush(payload, r.keys, cfg.PadTo)
	if err != nil {
		r.d.Err = fmt.Errorf("%sencrypt: %w", label, err)
		return push.OutcomeFailed
	}
	for try := 1; ; try++ {
		if gate := r.o.Gate; gate != nil {
			if err := gate.Enter(r.ctx); err != nil {
				r.d.Err = fmt.Errorf("%scancelled waiting for a slot: %w", label, err)
				return push.OutcomeFailed
			}
		}
		at := cfg.Now()
		start := time.Now()
		resp, err := r.s.post(r.ctx, r, body, topic)
		latency := time.Since(start)
		if gate := r.o.Gate; gate != nil {
			gate.Leave()
		}
		outcome, cause := classify(resp, err)
		var wait time.Duration
		if outcome == push.OutcomeRetry {
			wait = backoff(try, cfg.BaseBackoff, cfg.MaxBackoff, cfg.Jitter)
			if resp.hasRetryAfter {
				wait = max(wait, resp.retryAfter)
			}
			switch {
			case r.ctx.Err() != nil:
				outcome, cause = push.OutcomeFailed, "cancelled: "+cause
			case try >= cfg.MaxAttempts:
				outcome, cause = push.OutcomeFailed, fmt.Sprintf("gave up after %d attempts: %s", try, cause)
			case r.waited+wait > cfg.MaxRetryWait || pastDeadline(r.ctx, wait):
				outcome, cause = push.OutcomeFailed, fmt.Sprintf("gave up: waiting %s more would exceed the retry budget: %s", wait, cause)
			}
		}
		if cause != "" { // a delivered chunk has no error to label
			cause = label + cause
		}
		r.record(at, resp.status, outcome, latency, cause)
		r.d.Status = resp.status
		if outcome != push.OutcomeRetry {
			if outcome != push.OutcomeDelivered {
				r.d.Err = errors.New(label + cause)
			}
			return outcome
		}
		if err := cfg.Sleep(r.ctx, wait); err != nil {
			r.d.Err = fmt.Errorf("%scancelled while waiting to retry: %w", label, err)
			return push.OutcomeFailed
		}
		r.waited += wait
	}
}

// pastDeadline reports whether ctx ends before a wait of d is over.
func pastDeadline(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return ok && time.Until(deadline) < d
}

func (r *run) record(at time.Time, status int, outcome push.Outcome, latency time.Duration, cause string) {
	r.s.metrics.attempt(outcome, latency.Seconds())
	r.d.Attempts = append(r.d.Attempts, push.Attempt{
		At:        at,
		MessageID: r.o.ID,
		PushHost:  r.d.PushHost,
		Try:       len(r.d.Attempts) + 1,
		Status:    status,
		Outcome:   outcome,
		Latency:   latency,
		Error:     scrubEndpoint(cause, r.endpoint, r.d.PushHost),
	})
}

// response is what the sender keeps of a push service's answer.
type response struct {
	status        int
	retryAfter    time.Duration
	hasRetryAfter bool
	body          string // the start of the body, for diagnostics
}

// Bounds on reading a push service's answer: enough for an error reason,
// and enough draining to keep the connection reusable.
const (
	maxBodySnippet = 256
	maxBodyDrain   = 64 << 10
)

// Header values shared by every request; the transport only reads them.
var (
	contentEncodingAES128GCM = []string{"aes128gcm"}
	contentTypeOctetStream   = []string{"application/octet-stream"}
)

// post makes one request with an encrypted body. It is made on the
// transport, without http.Client, whose work is all for features the
// sender does without (redirects, cookies, a timeout of its own: the
// request's context has it), and with the endpoint parsed once per run.
func (s *Sender) post(ctx context.Context, r *run, body []byte, topic string) (response, error) {
	auth, err := s.signer.header(r.origin)
	if err != nil {
		return response{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, s.hangs.requestTimeout(r.origin, s.cfg.Timeout))
	defer cancel()
	if s.h2 != nil && r.url.Scheme == "https" {
		if out, err := s.postH2(ctx, rctx, r, body, auth, topic); !errors.Is(err, h2.ErrNotH2) {
			return out, err
		}
	}
	// Keys set directly, the per-request values in one slice. Those that
	// net/http does not know are in lower case, as HTTP/2 sends every name
	// (RFC 9113 §8.2.2), which spares the transport a lower-case copy of
	// each per request; over HTTP/1.1 they go as written, and names are
	// case-insensitive (RFC 9110 §5.1).
	h := make(http.Header, 6)
	values := []string{auth, r.o.ttlText, string(r.o.urgency), topic}
	h["Authorization"] = values[0:1:1]
	h["Content-Encoding"] = contentEncodingAES128GCM
	h["Content-Type"] = contentTypeOctetStream
	h["ttl"] = values[1:2:2]
	h["urgency"] = values[2:3:3]
	if topic != "" {
		h["topic"] = values[3:4:4]
	}
	req := (&http.Request{
		Method: http.MethodPost, URL: r.url, Host: r.url.Host, Header: h,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: &requestBody{body}, ContentLength: int64(len(body)),
		// The transport replays the body when it retries on a new
		// connection (a GOAWAY, a refused stream).
		GetBody: func() (io.ReadCloser, error) { return &requestBody{body}, nil },
	}).WithContext(rctx)
	resp, err := s.transport.RoundTrip(req)
	s.hangs.observe(r.origin, err, ctx)
	if err != nil {
		return response{}, err
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBodyDrain))
		_ = resp.Body.Close()
	}()
	var snippet []byte
	if resp.StatusCode/100 != 2 { // a success's body says nothing we keep
		snippet, _ = io.ReadAll(io.LimitReader(resp.Body, maxBodySnippet))
	}
	return s.answer(resp.StatusCode, resp.Header.Get("Retry-After"), snippet), nil
}

// answer is what post keeps of a push service's answer, over either client.
func (s *Sender) answer(status int, retryAfter string, snippet []byte) response {
	out := response{status: status, body: printable(snippet)}
	out.retryAfter, out.hasRetryAfter = parseRetryAfter(retryAfter, s.cfg.Now())
	return out
}

// userAgent is what net/http names itself over HTTP/2, kept for the h2
// client so push services see the requests they saw before it.
const userAgent = "Go-http-client/2.0"

// postH2 makes post's request with the sender's own HTTP/2 client; the
// same headers, timeout and answer as over net/http. h2.ErrNotH2 says the
// origin does not speak h2.
func (s *Sender) postH2(ctx, rctx context.Context, r *run, body []byte, auth, topic string) (response, error) {
	fields := make([]hpack.HeaderField, 0, 7)
	fields = append(fields,
		hpack.HeaderField{Name: "authorization", Value: auth},
		hpack.HeaderField{Name: "content-encoding", Value: contentEncodingAES128GCM[0]},
		hpack.HeaderField{Name: "content-type", Value: contentTypeOctetStream[0]},
		hpack.HeaderField{Name: "ttl", Value: r.o.ttlText},
		hpack.HeaderField{Name: "urgency", Value: string(r.o.urgency)},
		hpack.HeaderField{Name: "user-agent", Value: userAgent})
	if topic != "" {
		fields = append(fields, hpack.HeaderField{Name: "topic", Value: topic})
	}
	resp, err := s.h2.Do(rctx, &h2.Request{Authority: r.url.Host, Path: r.url.RequestURI(), Header: fields, Body: body})
	if errors.Is(err, h2.ErrNotH2) {
		return response{}, err
	}
	s.hangs.observe(r.origin, err, ctx)
	if err != nil {
		return response{}, err
	}
	return s.answer(resp.Status, resp.RetryAfter, resp.Body), nil
}

// requestBody is an encrypted body as a request's. It reports io.EOF with
// its last bytes, so the HTTP/2 transport ends the stream without reading
// it again (into a scratch byte of its own per request), and takes one
// allocation where io.NopCloser over a bytes.Reader takes two.
type requestBody struct{ rest []byte }

func (b *requestBody) Read(p []byte) (int, error) {
	n := copy(p, b.rest)
	b.rest = b.rest[n:]
	if len(b.rest) == 0 {
		return n, io.EOF
	}
	return n, nil
}

func (b *requestBody) Close() error { return nil }

// classify applies the status policy: what an answer (or its absence) means
// for the message and the subscription, and why in words.
func classify(r response, err error) (push.Outcome, string) {
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message would repeat the endpoint
		}
		if errors.Is(err, ErrRefusedAddress) {
			return push.OutcomeFailed, err.Error()
		}
		return push.OutcomeRetry, "network error: " + err.Error()
	}
	if r.status >= 200 && r.status < 300 {
		return push.OutcomeDelivered, ""
	}
	what := fmt.Sprintf("%d %s", r.status, http.StatusText(r.status))
	if r.body != "" {
		what += ": " + r.body
	}
	switch s := r.status; {
	case s == http.StatusNotFound || s == http.StatusGone:
		return push.OutcomeGone, "the subscription is gone (" + what + ")"
	case s == http.StatusRequestEntityTooLarge:
		return push.OutcomeTooLarge, "the push service refused the message as too large (" + what + ")"
	case s == http.StatusTooManyRequests || s == http.StatusRequestTimeout || s >= 500:
		return push.OutcomeRetry, what
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return push.OutcomeConfigError, "the push service refused the VAPID credentials; check the VAPID key pair and subject (" + what + ")"
	case s == http.StatusBadRequest && namesUnknownSubscription(r.body):
		return push.OutcomeUnknownSubscription, "the push service does not know the subscription (" + what + ")"
	case s == http.StatusBadRequest:
		return push.OutcomeConfigError, "the push service refused the request as malformed (" + what + ")"
	case s >= 300 && s < 400:
		return push.OutcomeFailed, "the push service answered a redirect, which is not followed (" + what + ")"
	default:
		return push.OutcomeFailed, what
	}
}

// namesUnknownSubscription reports a 400's body that says the push service
// does not know the subscription (FCM: "the registration token is not a
// valid FCM registration token"; others: "invalid subscription"), rather
// than that the request was malformed.
func namesUnknownSubscription(body string) bool {
	body = strings.ToLower(body)
	if !strings.Contains(body, "subscription") && !strings.Contains(body, "registration") {
		return false
	}
	for _, word := range []string{"invalid", "unknown", "not found", "not a valid", "unregistered", "expired"} {
		if strings.Contains(body, word) {
			return true
		}
	}
	return false
}

// printable keeps a response snippet to one line of printable text.
func printable(b []byte) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, string(b)))
}

// scrubEndpoint keeps the endpoint, a bearer capability, out of text that
// is logged or stored, whatever a library put into an error.
func scrubEndpoint(text, endpoint, host string) string {
	if endpoint == "" {
		return text
	}
	return strings.ReplaceAll(text, endpoint, host)
}

// logDelivery logs one device's outcome at a level fit for it. A delivered
// push logs at debug: the check comes first, so the common case builds no
// attributes.
func (s *Sender) logDelivery(d Delivery, messageID string, attrs ...any) {
	level, msg := slog.LevelWarn, "push not delivered"
	switch d.Outcome {
	case push.OutcomeDelivered:
		level, msg = slog.LevelDebug, "push delivered"
	case push.OutcomeGone:
		level, msg = slog.LevelInfo, "push subscription gone"
	case push.OutcomeUnknownSubscription:
		level, msg = slog.LevelInfo, "push subscription unknown to its push service"
	case push.OutcomeConfigError:
		level, msg = slog.LevelError, "push not delivered: a configuration error"
	}
	if !s.log.Enabled(context.Background(), level) {
		return
	}
	attrs = append(attrs, "host", d.PushHost, "messageId", messageID, "outcome", d.Outcome,
		"status", d.Status, "attempts", len(d.Attempts))
	if d.Cut {
		attrs = append(attrs, "cut", true)
	}
	if d.Chunks > 0 {
		attrs = append(attrs, "chunks", d.Chunks)
	}
	if d.Err != nil {
		attrs = append(attrs, "err", d.Err.Error())
	}
	s.log.Log(context.Background(), level, msg, attrs...)
}
