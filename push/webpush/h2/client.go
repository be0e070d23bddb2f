// Package h2 is the push sender's own HTTP/2 client: POSTs of a few
// kilobytes with a handful of headers, whose answer is a status, a
// Retry-After and at most the start of an error's body. Over net/http every
// such request starts a goroutine, writes its HEADERS and DATA as two TLS
// records and wakes a read loop and its caller through the machinery of
// http.Request and http.Response; here a request is written by its caller,
// HEADERS and DATA in one buffered write (and the requests that queue behind
// each other on a connection in one flush), and answered by one wake-up from
// the connection's read loop.
//
// It speaks RFC 9113 over TLS with ALPN only, on golang.org/x/net/http2's
// Framer and hpack: a pool of connections per origin, SETTINGS both ways,
// flow control both ways, GOAWAY and REFUSED_STREAM with a retry of the
// streams the server never processed, RST_STREAM(CANCEL) when a request's
// context ends. An origin that does not negotiate h2 gets ErrNotH2, so the
// caller sends through net/http instead. Every resource is bounded (see
// limits.go).
package h2

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2/hpack"
)

// ErrNotH2 is what Do returns for an origin whose server did not negotiate
// HTTP/2 (or beyond maxOrigins origins with connections); the caller sends
// its request another way.
var ErrNotH2 = errors.New("h2: the server did not negotiate HTTP/2")

// errUnprocessed marks a request the server never processed (a stream
// refused, or above a GOAWAY's last stream id), which Do may send again on
// another connection.
var errUnprocessed = errors.New("h2: the server did not process the request")

// Config configures a Client. Zero values take the defaults shown.
type Config struct {
	// Dial opens the TCP connection to an address host:port; it is where
	// the caller's address policy applies.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLS is the base TLS configuration (RootCAs); ServerName and
	// NextProtos are set per connection.
	TLS *tls.Config
	// HandshakeTimeout bounds the TLS handshake and the exchange of
	// SETTINGS on a new connection; default 10 s.
	HandshakeTimeout time.Duration
	// MaxConnsPerHost bounds the connections to one origin, idle ones
	// included; default 256.
	MaxConnsPerHost int
	// IdleTimeout closes a connection without streams for this long;
	// default 90 s.
	IdleTimeout time.Duration
	// BodySnippet is how many bytes of a non-2xx answer's body are kept;
	// default 256, at most maxResponseBody.
	BodySnippet int
}

// Request is one POST.
type Request struct {
	Authority string // the URL's host[:port]; the port defaults to 443
	Path      string // path and query
	// Header holds the regular fields, names in lower case; content-length
	// is added from Body.
	Header []hpack.HeaderField
	Body   []byte
}

// Response is what the caller keeps of an answer.
type Response struct {
	Status     int
	RetryAfter string // the Retry-After field, "" if none
	Body       []byte // the start of a non-2xx answer's body
}

// Client sends requests over pooled HTTP/2 connections. It is safe for
// concurrent use.
type Client struct {
	cfg Config

	mu    sync.Mutex
	pools map[string]*pool // by dial address, host:port
	http1 map[string]bool  // dial addresses whose servers negotiated no h2
}

// New returns a Client.
func New(cfg Config) *Client {
	cfg.HandshakeTimeout = cmp.Or(cfg.HandshakeTimeout, 10*time.Second)
	cfg.MaxConnsPerHost = cmp.Or(cfg.MaxConnsPerHost, 256)
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, 90*time.Second)
	cfg.BodySnippet = min(cmp.Or(cfg.BodySnippet, 256), maxResponseBody)
	if cfg.TLS == nil {
		cfg.TLS = &tls.Config{}
	}
	if cfg.Dial == nil {
		cfg.Dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	return &Client{cfg: cfg, pools: map[string]*pool{}, http1: map[string]bool{}}
}

// Do sends req and waits for its answer until ctx ends, when the stream is
// reset with CANCEL and ctx's error returned. A request the server did not
// process is sent once more, on another connection where there is one.
func (c *Client) Do(ctx context.Context, req *Request) (Response, error) {
	p, err := c.pool(req.Authority)
	if err != nil {
		return Response{}, err
	}
	var avoid *conn
	for try := 0; ; try++ {
		cc, err := p.acquire(ctx, avoid)
		if errors.Is(err, errPoolDropped) {
			if p, err = c.pool(req.Authority); err != nil {
				return Response{}, err
			}
			try--
			continue
		}
		if err != nil {
			return Response{}, err
		}
		resp, err := cc.roundTrip(ctx, req)
		if errors.Is(err, errUnprocessed) && try < maxUnprocessedRetries && ctx.Err() == nil {
			avoid = cc
			continue
		}
		return resp, err
	}
}

// Close closes every connection; requests on them fail.
func (c *Client) Close() {
	c.mu.Lock()
	pools := make([]*pool, 0, len(c.pools))
	for _, p := range c.pools {
		pools = append(pools, p)
	}
	c.mu.Unlock()
	for _, p := range pools {
		p.mu.Lock()
		conns := append([]*conn(nil), p.conns...)
		p.mu.Unlock()
		for _, cc := range conns {
			cc.close(errClientClosed)
		}
	}
}

// Conns returns how many connections are open.
func (c *Client) Conns() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, p := range c.pools {
		p.mu.Lock()
		n += len(p.conns)
		p.mu.Unlock()
	}
	return n
}

var errClientClosed = errors.New("h2: client closed")

// pool returns the pool of an authority's origin, or ErrNotH2.
func (c *Client) pool(authority string) (*pool, error) {
	addr := authority
	if _, port, err := net.SplitHostPort(authority); err != nil || port == "" {
		addr = net.JoinHostPort(strings.Trim(authority, "[]"), "443")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.http1[addr] {
		return nil, ErrNotH2
	}
	p := c.pools[addr]
	if p == nil {
		if len(c.pools) >= maxOrigins { // the rest go through the caller's other way
			return nil, fmt.Errorf("%w: %d origins have connections already", ErrNotH2, maxOrigins)
		}
		host, _, _ := net.SplitHostPort(addr)
		p = &pool{c: c, addr: addr, serverName: host}
		c.pools[addr] = p
	}
	return p, nil
}

// markHTTP1 remembers that addr's server negotiated no h2.
func (c *Client) markHTTP1(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.http1) >= maxOrigins {
		clear(c.http1)
	}
	c.http1[addr] = true
}

// dropIfEmpty forgets a pool left without connections, so the map holds
// only origins in use.
func (c *Client) dropIfEmpty(p *pool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.conns) == 0 && p.dialing == 0 && p.wake == nil && c.pools[p.addr] == p {
		delete(c.pools, p.addr)
		p.dropped = true
	}
}

// errPoolDropped sends a request that held a pool forgotten meanwhile to
// the origin's current one.
var errPoolDropped = errors.New("h2: pool dropped")

// pool is the connections to one origin.
type pool struct {
	c          *Client
	addr       string // host:port
	serverName string

	mu      sync.Mutex
	conns   []*conn
	dialing int
	wake    chan struct{} // closed when a stream slot or a connection frees; nil with no one waiting
	dropped bool          // no longer the client's pool of addr
}

// acquire reserves a stream on a connection that has room, dialing one
// when all are full and the pool is under MaxConnsPerHost, else waiting.
// avoid is a connection to pass over while another can take the stream.
func (p *pool) acquire(ctx context.Context, avoid *conn) (*conn, error) {
	for {
		p.mu.Lock()
		if p.dropped {
			p.mu.Unlock()
			return nil, errPoolDropped
		}
		for _, cc := range p.conns {
			if cc != avoid && cc.reserve() {
				p.mu.Unlock()
				return cc, nil
			}
		}
		if len(p.conns)+p.dialing < p.c.cfg.MaxConnsPerHost && !p.pausedLocked() {
			p.dialing++
			p.mu.Unlock()
			cc, err := p.dial(ctx)
			reserved, err := p.dialed(cc, err, true)
			switch {
			case err != nil:
				return nil, err
			case reserved:
				return cc, nil
			}
			continue // the server allows no streams yet: wait for its SETTINGS
		}
		if avoid != nil && avoid.reserve() {
			p.mu.Unlock()
			return avoid, nil
		}
		if p.wake == nil {
			p.wake = make(chan struct{})
		}
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// dialed adds a connection dialed for the pool (one counted in dialing),
// with a stream reserved on it for the dialer's request when reserve is set
// and the server allows one; a dial that failed forgets an empty pool.
func (p *pool) dialed(cc *conn, err error, reserve bool) (reserved bool, _ error) {
	p.mu.Lock()
	p.dialing--
	if err == nil {
		if reserved = reserve && cc.maxStreams > 0; reserved {
			cc.active = 1 // reserved for this request before anyone else sees it
		}
		cc.armIdle()
		p.conns = append(p.conns, cc)
		go cc.readLoop()
	}
	p.signalLocked()
	p.mu.Unlock()
	if err != nil {
		p.c.dropIfEmpty(p)
	}
	return reserved, err
}

// pausedLocked reports a connection whose server allows no streams for
// now (SETTINGS_MAX_CONCURRENT_STREAMS 0): requests wait for its next
// SETTINGS rather than open connection after connection.
func (p *pool) pausedLocked() bool {
	for _, cc := range p.conns {
		cc.mu.Lock()
		paused := cc.err == nil && !cc.goAway && cc.maxStreams == 0
		cc.mu.Unlock()
		if paused {
			return true
		}
	}
	return false
}

// signalLocked wakes the requests waiting for room.
func (p *pool) signalLocked() {
	if p.wake != nil {
		close(p.wake)
		p.wake = nil
	}
}

// freed tells waiters a stream slot or a connection freed.
func (p *pool) freed() {
	p.mu.Lock()
	p.signalLocked()
	p.mu.Unlock()
}

// remove drops a closed connection.
func (p *pool) remove(cc *conn) {
	p.mu.Lock()
	for i, c := range p.conns {
		if c == cc {
			p.conns = append(p.conns[:i], p.conns[i+1:]...)
			break
		}
	}
	p.signalLocked()
	p.mu.Unlock()
	p.c.dropIfEmpty(p)
}
