// Package pushtest is a fake Web Push service for tests, in the manner of
// net/http/httptest. It issues subscriptions whose keys it owns, checks every
// request the way a push service and a browser together would (the VAPID JWT
// of RFC 8292, the headers of RFC 8030, aes128gcm decryption of RFC 8188 and
// RFC 8291 with its own code), records what arrived, puts `_multipart` chunks
// back together, and answers with whatever status a test scripts. Options
// add TLS (with the certificate as PEM for a child process to trust), a
// counting mode for long benchmark runs, and a stand-in host name such as
// Apple's.
package pushtest

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"amsg/push"
)

// DefaultMaxBodyBytes is the body size real push services accept at most.
const DefaultMaxBodyBytes = push.MaxEncryptedBytes

// Response is a scripted answer.
type Response struct {
	Status     int
	RetryAfter string // the Retry-After header, if not empty
	Body       string
}

// Message is one request the service received.
type Message struct {
	Endpoint   string
	Status     int         // what the service answered
	Header     http.Header // as received
	Body       []byte      // the encrypted body
	Plaintext  []byte      // the decrypted push; nil if verification failed
	RecordSize int         // the rs field of the aes128gcm header
	ReceivedAt time.Time
	// The RFC 8030 headers as received ("" when absent); TTL is -1 when
	// the header is absent or malformed.
	Urgency string
	Topic   string
	TTL     int
	// Authorization is the raw VAPID header, to compare tokens across
	// requests.
	Authorization string
}

// Options configure a Server beyond NewServer's defaults.
type Options struct {
	// TLS serves https with a self-signed certificate made for this server;
	// CertPEM returns it for a client or a child process to trust
	// (SSL_CERT_FILE for Go, NODE_EXTRA_CA_CERTS for node).
	TLS bool
	// DiscardBodies verifies and decrypts every request as usual but keeps
	// only counts and errors: Requests, Messages and Pushes stay empty and
	// WaitMessages and WaitPushes return nil slices, so a run of 100 000
	// pushes stays small. Use Counts and WaitDelivered.
	DiscardBodies bool
	// Host is the host name in the endpoints instead of 127.0.0.1, such as
	// "web.push.apple.com" to stand for another push service. The server
	// still listens on loopback; a sender reaches it through Resolver, and
	// the TLS certificate names the host too.
	Host string
	// OnDelivered, if set, sees every delivered message (decrypted, with
	// its headers and arrival time) before it is counted, so a benchmark
	// can measure each push while DiscardBodies keeps none. It runs on the
	// request's goroutine, concurrently with others.
	OnDelivered func(Message)
}

// Counts are what a server received so far.
type Counts struct {
	Requests  int // every request
	Delivered int // answered 2xx
	Pushes    int // whole pushes restored, multipart ones once
	Errors    int // failed verification
}

// maxKeptErrors bounds Errors; Counts.Errors counts them all.
const maxKeptErrors = 1000

// Push is a push as the service worker would see it: an inline message, or
// the original JSON restored from its `_multipart` chunks.
type Push struct {
	Endpoint string
	JSON     []byte
	Chunks   int // how many chunks it came in; 0 when inline
}

// Server is the fake push service. Its zero value is not usable; call
// NewServer.
type Server struct {
	URL string // base URL, http://127.0.0.1:port

	srv      *httptest.Server
	conns    atomic.Int64 // connections accepted
	opts     Options
	certPEM  []byte
	vapidKey []byte // the application server's public key, 65 bytes
	tokens   tokenCache

	mu           sync.Mutex
	maxBodyBytes int
	deviceClock  func() time.Time
	subs         map[string]*subscription // by endpoint
	requests     []Message
	pushes       []Push
	errs         []error
	counts       Counts
	changed      chan struct{} // closed and replaced on every new record
}

type subscription struct {
	key     *ecdh.PrivateKey
	auth    []byte
	script  []Response
	parts   *MultipartReassembler
	retired bool
}

// NewServer starts a push service on plain http that accepts requests
// signed by the VAPID key pair whose public key is vapidPublicKey
// (base64url). Call Close when done.
func NewServer(vapidPublicKey string) *Server {
	return NewServerWithOptions(vapidPublicKey, Options{})
}

// NewServerWithOptions starts a push service as NewServer does, configured
// by opts.
func NewServerWithOptions(vapidPublicKey string, opts Options) *Server {
	key, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(vapidPublicKey, "="))
	if err != nil || len(key) != 65 {
		panic("pushtest: the VAPID public key must be base64url of a 65-byte point")
	}
	s := &Server{
		opts:         opts,
		vapidKey:     key,
		maxBodyBytes: DefaultMaxBodyBytes,
		deviceClock:  time.Now,
		subs:         make(map[string]*subscription),
		changed:      make(chan struct{}),
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.conns.Add(1)
		}
	}
	if opts.TLS {
		cert, certPEM, err := selfSignedCert(opts.Host)
		if err != nil {
			panic("pushtest: " + err.Error())
		}
		s.certPEM = certPEM
		s.srv.EnableHTTP2 = true
		s.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	s.URL = s.srv.URL
	if opts.Host != "" {
		s.URL = strings.Replace(s.URL, "127.0.0.1", opts.Host, 1)
	}
	return s
}

// Conns returns how many connections the server accepted so far.
func (s *Server) Conns() int { return int(s.conns.Load()) }

// CertPEM returns the TLS certificate in PEM, nil without Options.TLS.
func (s *Server) CertPEM() []byte { return s.certPEM }

// Client returns an HTTP client that trusts the server's certificate and
// reaches Options.Host.
func (s *Server) Client() *http.Client {
	c := s.srv.Client()
	if s.opts.Host != "" {
		t := c.Transport.(*http.Transport).Clone()
		addr := s.srv.Listener.Addr().String()
		t.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}
		c = &http.Client{Transport: t}
	}
	return c
}

// Resolver resolves Options.Host to the loopback address the server
// listens on and every other name as net.DefaultResolver does; it fits
// webpush.Config.Resolver.
func (s *Server) Resolver() Resolver { return Resolver{host: s.opts.Host} }

// Resolver is what Server.Resolver returns.
type Resolver struct{ host string }

// LookupNetIP resolves host.
func (r Resolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if r.host != "" && strings.EqualFold(strings.TrimSuffix(host, "."), r.host) {
		return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1})}, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, network, host)
}

// Close shuts the service down.
func (s *Server) Close() { s.srv.Close() }

// Subscribe issues a new subscription, as a browser's pushManager.subscribe
// would, with a fresh P-256 key pair and auth secret.
func (s *Server) Subscribe() push.Subscription {
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	endpoint := s.URL + "/push/" + base64.RawURLEncoding.EncodeToString(id)
	s.mu.Lock()
	// Add runs under s.mu (from record), where deviceClock may be read.
	s.subs[endpoint] = &subscription{key: key, auth: auth,
		parts: &MultipartReassembler{Now: func() time.Time { return s.deviceClock() }}}
	s.mu.Unlock()
	return push.Subscription{Endpoint: endpoint, Keys: push.SubscriptionKeys{
		P256dh: base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes()),
		Auth:   base64.RawURLEncoding.EncodeToString(auth),
	}}
}

// Respond makes the next n requests to sub that pass verification answer r,
// after any answers already scripted. Unscripted requests get 201 Created.
func (s *Server) Respond(sub push.Subscription, n int, r Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.subs[sub.Endpoint]
	if st == nil {
		panic("pushtest: Respond for a subscription this server did not issue")
	}
	for range n {
		st.script = append(st.script, r)
	}
}

// Unsubscribe retires sub, as a browser does when the user revokes
// permission: later requests to it are answered 410 Gone.
func (s *Server) Unsubscribe(sub push.Subscription) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.subs[sub.Endpoint]; st != nil {
		st.retired = true
	}
}

// SetMaxBodyBytes changes the largest body accepted (default 4096); larger
// ones are answered 413, as some mobile push services do near 3 KB.
func (s *Server) SetMaxBodyBytes(n int) {
	s.mu.Lock()
	s.maxBodyBytes = n
	s.mu.Unlock()
}

// SetDeviceClock sets the clock of the devices behind the subscriptions,
// which expire `_multipart` sets at the sender's createdAt plus their TTL
// (at most 60 s) as the service worker does. A test whose sender runs on a
// fake clock gives the same clock here, as a device that agrees with the
// server; the default is time.Now.
func (s *Server) SetDeviceClock(now func() time.Time) {
	s.mu.Lock()
	s.deviceClock = now
	s.mu.Unlock()
}

// Requests returns every request received, in arrival order.
func (s *Server) Requests() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.requests...)
}

// Messages returns the requests answered with 2xx: the messages delivered.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deliveredLocked()
}

func (s *Server) deliveredLocked() []Message {
	var out []Message
	for _, m := range s.requests {
		if m.Status/100 == 2 {
			out = append(out, m)
		}
	}
	return out
}

// Pushes returns the pushes delivered, multipart ones once reassembled.
func (s *Server) Pushes() []Push {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Push(nil), s.pushes...)
}

// Counts returns how many requests, deliveries, pushes and errors arrived.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// WaitDelivered waits until n messages have been delivered, in either
// mode, and returns the counts then.
func (s *Server) WaitDelivered(ctx context.Context, n int) (Counts, error) {
	c, err := waitFor(ctx, s, n, "messages", func() int { return s.counts.Delivered },
		func() []Counts { return []Counts{s.counts} })
	if err != nil {
		return s.Counts(), err
	}
	return c[0], nil
}

// Errors returns what failed verification: bad VAPID tokens, headers,
// encryption, or chunks; the first 1000 of them. A correct sender leaves
// it empty.
func (s *Server) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

// WaitMessages waits until n messages have been delivered and returns them.
func (s *Server) WaitMessages(ctx context.Context, n int) ([]Message, error) {
	return waitFor(ctx, s, n, "messages", func() int { return s.counts.Delivered }, s.deliveredLocked)
}

// WaitPushes waits until n pushes have been delivered whole and returns them.
func (s *Server) WaitPushes(ctx context.Context, n int) ([]Push, error) {
	return waitFor(ctx, s, n, "pushes", func() int { return s.counts.Pushes },
		func() []Push { return append([]Push(nil), s.pushes...) })
}

// waitFor blocks on the change signal, not on a timer, until count
// reaches n or ctx ends, and returns what collect gathers then. Both run
// under s.mu; only count runs on every change, so waiting for the last of
// many pushes costs no copy of the earlier ones.
func waitFor[T any](ctx context.Context, s *Server, n int, what string, count func() int, collect func() []T) ([]T, error) {
	for {
		s.mu.Lock()
		have, changed := count(), s.changed
		var items []T
		if have >= n {
			items = collect()
		}
		s.mu.Unlock()
		if have >= n {
			return items, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pushtest: waiting for %d %s, got %d (errors: %v): %w",
				n, what, have, s.Errors(), ctx.Err())
		case <-changed:
		}
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	endpoint := s.URL + r.URL.Path
	s.mu.Lock()
	st, maxBody := s.subs[endpoint], s.maxBodyBytes
	s.mu.Unlock()
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(maxBody)+1))
	msg := Message{Endpoint: endpoint, Header: r.Header.Clone(), Body: body, ReceivedAt: time.Now(),
		Urgency: r.Header.Get("Urgency"), Topic: r.Header.Get("Topic"), TTL: -1,
		Authorization: r.Header.Get("Authorization")}
	answer := func(status int, fail error) {
		msg.Status = status
		s.record(msg, fail, st)
		w.WriteHeader(status)
	}
	switch {
	case err != nil:
		answer(http.StatusBadRequest, fmt.Errorf("%s: reading the body: %w", endpoint, err))
		return
	case r.Method != http.MethodPost:
		answer(http.StatusMethodNotAllowed, fmt.Errorf("%s: method %s, want POST", endpoint, r.Method))
		return
	case st == nil:
		answer(http.StatusNotFound, nil)
		return
	}
	if err := s.tokens.verify(msg.Authorization, s.vapidKey, s.URL, time.Now()); err != nil {
		answer(http.StatusUnauthorized, fmt.Errorf("%s: VAPID: %w", endpoint, err))
		return
	}
	ttl, err := checkHeaders(r.Header)
	if err != nil {
		answer(http.StatusBadRequest, fmt.Errorf("%s: %w", endpoint, err))
		return
	}
	msg.TTL = ttl
	if len(body) > maxBody {
		answer(http.StatusRequestEntityTooLarge, nil)
		return
	}
	plaintext, rs, err := decrypt(body, st.key, st.auth)
	if err != nil {
		answer(http.StatusBadRequest, fmt.Errorf("%s: aes128gcm: %w", endpoint, err))
		return
	}
	msg.Plaintext, msg.RecordSize = plaintext, rs

	s.mu.Lock()
	reply := Response{Status: http.StatusCreated}
	switch {
	case st.retired:
		reply.Status = http.StatusGone
	case len(st.script) > 0:
		reply, st.script = st.script[0], st.script[1:]
	}
	s.mu.Unlock()
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	msg.Status = reply.Status
	if s.opts.OnDelivered != nil && msg.Status/100 == 2 {
		s.opts.OnDelivered(msg) // before record, so a waiter woken by it sees the callback's effect
	}
	s.record(msg, nil, st)
	w.WriteHeader(reply.Status)
	_, _ = io.WriteString(w, reply.Body)
}

// record stores a request (or, with DiscardBodies, counts it) and, when it
// was delivered, the push it carries, then wakes the waiters.
func (s *Server) record(msg Message, fail error, st *subscription) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts.Requests++
	if !s.opts.DiscardBodies {
		s.requests = append(s.requests, msg)
	}
	if msg.Status/100 == 2 {
		s.counts.Delivered++
	}
	s.fail(fail)
	if msg.Status/100 == 2 && msg.Plaintext != nil {
		if p, err := s.restore(msg, st); err != nil {
			s.fail(fmt.Errorf("%s: %w", msg.Endpoint, err))
		} else if p != nil {
			s.counts.Pushes++
			if !s.opts.DiscardBodies {
				s.pushes = append(s.pushes, *p)
			}
		}
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// fail records a verification error, if any; s.mu is held.
func (s *Server) fail(err error) {
	if err == nil {
		return
	}
	s.counts.Errors++
	if len(s.errs) < maxKeptErrors {
		s.errs = append(s.errs, err)
	}
}

// restore returns the push a delivered message completes, if any.
func (s *Server) restore(msg Message, st *subscription) (*Push, error) {
	part, err := DecodeMultipartChunk(msg.Plaintext, 0)
	if errors.Is(err, ErrNotMultipart) {
		return &Push{Endpoint: msg.Endpoint, JSON: msg.Plaintext}, nil
	}
	if err != nil {
		return nil, err
	}
	whole, err := st.parts.Add(part)
	if err != nil || whole == nil {
		return nil, err
	}
	return &Push{Endpoint: msg.Endpoint, JSON: whole, Chunks: part.Meta.Total}, nil
}

// checkHeaders checks the RFC 8030 and RFC 8188 headers of a push request
// and returns the TTL. A malformed Topic is refused as Mozilla's service
// does (400).
func checkHeaders(h http.Header) (ttl int, err error) {
	if ce := h.Get("Content-Encoding"); !strings.EqualFold(ce, "aes128gcm") {
		return 0, fmt.Errorf("header Content-Encoding is %q, want aes128gcm", ce)
	}
	text := h.Get("TTL")
	n, err := strconv.ParseUint(text, 10, 31)
	if err != nil || strconv.FormatUint(n, 10) != text {
		return 0, fmt.Errorf("header TTL is %q, want a non-negative number of seconds", text)
	}
	switch u := h.Get("Urgency"); u {
	case "", "very-low", "low", "normal", "high":
	default:
		return 0, fmt.Errorf("header Urgency is %q", u)
	}
	if t := h.Get("Topic"); len(t) > 32 || strings.Trim(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		return 0, fmt.Errorf("header Topic %q is not up to 32 base64url characters", t)
	}
	return int(n), nil
}
