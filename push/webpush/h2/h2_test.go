package h2

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// testCert is httptest's loopback certificate and a pool that trusts it.
func testCert(t testing.TB) (tls.Certificate, *x509.CertPool) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv.TLS.Certificates[0], pool
}

// newTestClient is a client that trusts httptest's certificate.
func newTestClient(t testing.TB, pool *x509.CertPool, cfg Config) *Client {
	cfg.TLS = &tls.Config{RootCAs: pool}
	c := New(cfg)
	t.Cleanup(c.Close)
	return c
}

func post(body string) *Request {
	return &Request{Path: "/push/1", Body: []byte(body), Header: []hpack.HeaderField{
		{Name: "ttl", Value: "60"}, {Name: "content-encoding", Value: "aes128gcm"}}}
}

// goServer is Go's own HTTP/2 server behind TLS on loopback.
func goServer(t *testing.T, h2cfg *http.HTTP2Config, h http.HandlerFunc) (*httptest.Server, *x509.CertPool) {
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.Config.HTTP2 = h2cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv, pool
}

func authority(srv *httptest.Server) string { return strings.TrimPrefix(srv.URL, "https://") }

// TestAgainstGoServer sends through Go's HTTP/2 server: the request's
// method, path, headers and body arrive, and the answer's status,
// Retry-After and (for an error) the start of its body come back.
func TestAgainstGoServer(t *testing.T) {
	srv, pool := goServer(t, nil, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.ProtoMajor != 2 || r.Method != http.MethodPost || r.URL.Path != "/push/1" ||
			r.Header.Get("Ttl") != "60" || r.ContentLength != int64(len(body)):
			http.Error(w, "bad request "+r.Proto, http.StatusBadRequest)
		case string(body) == "busy":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write(bytes.Repeat([]byte("slow down "), 1000))
		default:
			w.WriteHeader(http.StatusCreated)
		}
	})
	c := newTestClient(t, pool, Config{BodySnippet: 16})
	req := post("hello")
	req.Authority = authority(srv)
	resp, err := c.Do(context.Background(), req)
	if err != nil || resp.Status != http.StatusCreated || len(resp.Body) != 0 {
		t.Fatalf("%+v, %v", resp, err)
	}
	req = post("busy")
	req.Authority = authority(srv)
	resp, err = c.Do(context.Background(), req)
	if err != nil || resp.Status != http.StatusTooManyRequests || resp.RetryAfter != "7" || string(resp.Body) != "slow down slow d" {
		t.Fatalf("%+v, %v", resp, err)
	}
	if n := c.Conns(); n != 1 {
		t.Errorf("%d connections, want the one reused", n)
	}
}

// TestMaxConcurrentStreamsIsRespected sends 20 requests at once on one
// connection to a server allowing one stream at a time: they all succeed
// and the server never sees two at once.
func TestMaxConcurrentStreamsIsRespected(t *testing.T) {
	var inFlight, most atomic.Int32
	srv, pool := goServer(t, &http.HTTP2Config{MaxConcurrentStreams: 1}, func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
	})
	c := newTestClient(t, pool, Config{MaxConnsPerHost: 1})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			req := post(strings.Repeat("x", 3000))
			req.Authority = authority(srv)
			if resp, err := c.Do(context.Background(), req); err != nil || resp.Status != http.StatusCreated {
				errs <- errors.Join(err, errors.New(http.StatusText(resp.Status)))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if most.Load() != 1 {
		t.Errorf("the server saw %d streams at once, over its limit of 1", most.Load())
	}
}

// TestHTTP1OnlyServerIsDeclined: a server that negotiates no h2 gets
// ErrNotH2, at once the next time, so the caller sends through net/http.
func TestHTTP1OnlyServerIsDeclined(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler()) // HTTP/1.1 only
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	var dials atomic.Int32
	c := newTestClient(t, pool, Config{MaxConnsPerHost: 1, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}})
	// Eight at once on one connection's room: those that waited for the
	// first dial learn from it.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			req := post("x")
			req.Authority = authority(srv)
			if _, err := c.Do(context.Background(), req); !errors.Is(err, ErrNotH2) {
				t.Errorf("err %v, want ErrNotH2", err)
			}
		})
	}
	wg.Wait()
	req := post("x")
	req.Authority = authority(srv)
	if _, err := c.Do(context.Background(), req); !errors.Is(err, ErrNotH2) {
		t.Fatalf("err %v, want ErrNotH2", err)
	}
	if dials.Load() != 1 {
		t.Errorf("%d dials, want 1: the origin is remembered", dials.Load())
	}
}

// rawServer is a misbehaving HTTP/2 server on loopback TLS, written with
// http2.Framer: each accepted connection runs script after the preface
// and SETTINGS exchange.
type rawServer struct {
	ln       net.Listener
	settings []http2.Setting
	script   func(sc *serverConn)
	conns    atomic.Int32
	wg       sync.WaitGroup
}

// serverConn is one connection of a rawServer.
type serverConn struct {
	n   int // 1 for the first connection
	fr  *http2.Framer
	nc  net.Conn
	enc *hpack.Encoder
	buf bytes.Buffer
}

func newRawServer(t *testing.T, settings []http2.Setting, script func(sc *serverConn)) (*rawServer, *Client) {
	cert, pool := testCert(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, settings: settings, script: script}
	s.wg.Go(s.serve)
	c := newTestClient(t, pool, Config{})
	t.Cleanup(func() {
		c.Close()
		_ = ln.Close()
		s.wg.Wait()
	})
	return s, c
}

func (s *rawServer) request(body string) *Request {
	req := post(body)
	req.Authority = s.ln.Addr().String()
	return req
}

func (s *rawServer) serve() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		n := int(s.conns.Add(1))
		s.wg.Go(func() {
			defer func() { _ = nc.Close() }()
			sc := &serverConn{n: n, nc: nc, fr: http2.NewFramer(nc, nc)}
			sc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
			sc.enc = hpack.NewEncoder(&sc.buf)
			preface := make([]byte, len(http2.ClientPreface))
			if _, err := io.ReadFull(nc, preface); err != nil || string(preface) != http2.ClientPreface {
				return
			}
			if err := sc.fr.WriteSettings(s.settings...); err != nil {
				return
			}
			s.script(sc)
		})
	}
}

// next reads frames until one of the wanted type, answering SETTINGS
// and skipping the rest; nil when the connection ends.
func next[F http2.Frame](sc *serverConn) F {
	for {
		f, err := sc.fr.ReadFrame()
		if err != nil {
			var zero F
			return zero
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			_ = sc.fr.WriteSettingsAck()
		}
		if want, ok := f.(F); ok {
			return want
		}
	}
}

// readRequest reads a request's HEADERS and DATA to END_STREAM.
func (sc *serverConn) readRequest() (id uint32, body []byte) {
	h := next[*http2.MetaHeadersFrame](sc)
	if h == nil {
		return 0, nil
	}
	for ended := h.StreamEnded(); !ended; {
		d := next[*http2.DataFrame](sc)
		if d == nil {
			return 0, nil
		}
		body = append(body, d.Data()...)
		ended = d.StreamEnded()
	}
	return h.StreamID, body
}

// answer writes a response's HEADERS (with END_STREAM when no body).
func (sc *serverConn) answer(id uint32, status string, end bool, fields ...hpack.HeaderField) {
	sc.buf.Reset()
	_ = sc.enc.WriteField(hpack.HeaderField{Name: ":status", Value: status})
	for _, f := range fields {
		_ = sc.enc.WriteField(f)
	}
	_ = sc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: sc.buf.Bytes(), EndStream: end, EndHeaders: true})
}

// gotAndAnswer reports the body the server read and answers its stream
// with 201.
func (sc *serverConn) gotAndAnswer(got chan<- string, body []byte, id uint32) {
	got <- string(body)
	sc.answer(id, "201", true)
	next[*http2.GoAwayFrame](sc)
}

// sendAndCheck sends body and checks that it got 201 and that the server
// read the body whole (got).
func (s *rawServer) sendAndCheck(t *testing.T, c *Client, body string, got <-chan string) {
	t.Helper()
	resp, err := c.Do(context.Background(), s.request(body))
	if err != nil || resp.Status != 201 {
		t.Fatalf("%+v, %v", resp, err)
	}
	if b := <-got; b != body {
		t.Errorf("the server got %q", b)
	}
}

// TestGoAwayRetriesTheUnprocessedStream: of two requests in flight, the
// server answers the first and sends GOAWAY naming it as the last it
// processed; the second goes again on a new connection and succeeds.
func TestGoAwayRetriesTheUnprocessedStream(t *testing.T) {
	s, c := newRawServer(t, nil, func(sc *serverConn) {
		if sc.n == 1 {
			id, _ := sc.readRequest() // the warm-up
			sc.answer(id, "201", true)
			first, _ := sc.readRequest()
			second, _ := sc.readRequest()
			_ = sc.fr.WriteGoAway(min(first, second), http2.ErrCodeNo, nil)
			sc.answer(min(first, second), "201", true)
			next[*http2.GoAwayFrame](sc) // until the client hangs up
			return
		}
		id, body := sc.readRequest()
		sc.answer(id, "202", true, hpack.HeaderField{Name: "x-body", Value: string(body)})
		next[*http2.GoAwayFrame](sc)
	})
	if resp, err := c.Do(context.Background(), s.request("warm")); err != nil || resp.Status != 201 {
		t.Fatalf("warm-up: %+v, %v", resp, err)
	}
	statuses := make(chan int, 2)
	var wg sync.WaitGroup
	for _, body := range []string{"a", "b"} {
		wg.Go(func() {
			resp, err := c.Do(context.Background(), s.request(body))
			if err != nil {
				t.Error(err)
			}
			statuses <- resp.Status
		})
	}
	wg.Wait()
	close(statuses)
	got := map[int]int{}
	for st := range statuses {
		got[st]++
	}
	if got[201] != 1 || got[202] != 1 || s.conns.Load() != 2 {
		t.Errorf("statuses %v on %d connections; want one answered before GOAWAY and one retried on a second connection",
			got, s.conns.Load())
	}
}

// TestRefusedStreamIsRetriedElsewhere: REFUSED_STREAM on the first
// connection; the request is sent again on another and succeeds.
func TestRefusedStreamIsRetriedElsewhere(t *testing.T) {
	s, c := newRawServer(t, nil, func(sc *serverConn) {
		id, _ := sc.readRequest()
		if sc.n == 1 {
			_ = sc.fr.WriteRSTStream(id, http2.ErrCodeRefusedStream)
		} else {
			sc.answer(id, "201", true)
		}
		next[*http2.GoAwayFrame](sc)
	})
	resp, err := c.Do(context.Background(), s.request("x"))
	if err != nil || resp.Status != 201 || s.conns.Load() != 2 {
		t.Fatalf("%+v, %v on %d connections", resp, err, s.conns.Load())
	}
}

// TestOtherResetFailsTheRequest: a stream reset with anything but
// REFUSED_STREAM fails the request, without a retry.
func TestOtherResetFailsTheRequest(t *testing.T) {
	s, c := newRawServer(t, nil, func(sc *serverConn) {
		id, _ := sc.readRequest()
		_ = sc.fr.WriteRSTStream(id, http2.ErrCodeInternal)
		next[*http2.GoAwayFrame](sc)
	})
	_, err := c.Do(context.Background(), s.request("x"))
	if err == nil || !strings.Contains(err.Error(), "INTERNAL_ERROR") || s.conns.Load() != 1 {
		t.Fatalf("err %v on %d connections", err, s.conns.Load())
	}
}

// TestTinyWindowWaitsForWindowUpdate: with a 1-byte initial stream
// window the body goes a byte at a time, each after the server's
// WINDOW_UPDATE, and arrives whole.
func TestTinyWindowWaitsForWindowUpdate(t *testing.T) {
	const body = "a body of some bytes"
	got := make(chan string, 1)
	s, c := newRawServer(t, []http2.Setting{{ID: http2.SettingInitialWindowSize, Val: 1}}, func(sc *serverConn) {
		h := next[*http2.MetaHeadersFrame](sc)
		var b []byte
		for {
			d := next[*http2.DataFrame](sc)
			if d == nil {
				return
			}
			b = append(b, d.Data()...)
			if len(d.Data()) > 1 {
				got <- "a DATA frame past the window"
				return
			}
			if d.StreamEnded() {
				break
			}
			_ = sc.fr.WriteWindowUpdate(h.StreamID, uint32(len(d.Data())))
		}
		sc.gotAndAnswer(got, b, h.StreamID)
	})
	s.sendAndCheck(t, c, body, got)
}

// TestOversizedHeadersFailOnlyTheirRequest: an answer whose header list
// is over our limit (sent as HEADERS and CONTINUATION) fails its request
// with a stream reset, and the connection serves the next one.
func TestOversizedHeadersFailOnlyTheirRequest(t *testing.T) {
	resets := make(chan http2.ErrCode, 1)
	s, c := newRawServer(t, nil, func(sc *serverConn) {
		id, _ := sc.readRequest()
		sc.buf.Reset()
		_ = sc.enc.WriteField(hpack.HeaderField{Name: ":status", Value: "201"})
		// Two fields of 10 KiB, each under the hpack decoder's string
		// limit, over our header list limit together; random-looking
		// letters, so Huffman coding does not shrink them under it.
		var big strings.Builder
		for i := range 10 << 10 {
			big.WriteByte("qzjxkvwy"[i*7%8])
		}
		_ = sc.enc.WriteField(hpack.HeaderField{Name: "x-big-1", Value: big.String()})
		_ = sc.enc.WriteField(hpack.HeaderField{Name: "x-big-2", Value: big.String()})
		block := sc.buf.Bytes()
		_ = sc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block[:16000], EndStream: true})
		_ = sc.fr.WriteContinuation(id, true, block[16000:])
		rst := next[*http2.RSTStreamFrame](sc)
		if rst == nil {
			close(resets)
			return
		}
		resets <- rst.ErrCode
		id, _ = sc.readRequest()
		sc.answer(id, "201", true)
		next[*http2.GoAwayFrame](sc)
	})
	if _, err := c.Do(context.Background(), s.request("x")); !errors.Is(err, errHeaderListTooLarge) {
		t.Fatalf("err %v, want errHeaderListTooLarge", err)
	}
	if code := <-resets; code != http2.ErrCodeCancel {
		t.Errorf("reset with %v, want CANCEL", code)
	}
	if resp, err := c.Do(context.Background(), s.request("x")); err != nil || resp.Status != 201 || s.conns.Load() != 1 {
		t.Fatalf("the next request: %+v, %v on %d connections", resp, err, s.conns.Load())
	}
}

// TestCancelResetsTheStream: a server that never answers; when the
// request's context ends the caller gets its error and the server gets
// RST_STREAM(CANCEL) for the stream.
func TestCancelResetsTheStream(t *testing.T) {
	got := make(chan uint32)
	reset := make(chan *http2.RSTStreamFrame, 1)
	s, c := newRawServer(t, nil, func(sc *serverConn) {
		id, _ := sc.readRequest()
		got <- id
		reset <- next[*http2.RSTStreamFrame](sc)
		next[*http2.GoAwayFrame](sc)
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Do(ctx, s.request("x"))
		done <- err
	}()
	id := <-got
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want the context's", err)
	}
	if f := <-reset; f == nil || f.StreamID != id || f.ErrCode != http2.ErrCodeCancel {
		t.Errorf("the server got %v, want RST_STREAM(CANCEL) for stream %d", f, id)
	}
	if n := c.Conns(); n != 1 {
		t.Errorf("%d connections, want the one kept", n)
	}
}

// TestConnectionErrorFailsItsStreams: a frame that breaks the protocol
// (DATA on a stream we never opened) ends the connection with GOAWAY and
// fails the request in flight with an error.
func TestConnectionErrorFailsItsStreams(t *testing.T) {
	goAway := make(chan http2.ErrCode, 1)
	s, c := newRawServer(t, nil, func(sc *serverConn) {
		_, _ = sc.readRequest()
		_ = sc.fr.WriteData(2, true, []byte("x"))
		if f := next[*http2.GoAwayFrame](sc); f != nil {
			goAway <- f.ErrCode
		}
		close(goAway)
	})
	_, err := c.Do(context.Background(), s.request("x"))
	if err == nil || errors.Is(err, errUnprocessed) {
		t.Errorf("err %v, want a connection error", err)
	}
	if code := <-goAway; code != http2.ErrCodeProtocol {
		t.Errorf("GOAWAY %v, want PROTOCOL_ERROR", code)
	}
}

// TestAConnectionErrorsGoAwayLeavesWhileAWriterIsQueued: the read loop's
// GOAWAY for a connection error reaches the server even when another
// writer is queued behind it on the connection, whose flush would have
// carried it had the connection not closed first.
func TestAConnectionErrorsGoAwayLeavesWhileAWriterIsQueued(t *testing.T) {
	read, queued := make(chan struct{}), make(chan struct{})
	goAway := make(chan http2.ErrCode, 1)
	s, c := newRawServer(t, nil, func(sc *serverConn) {
		_, _ = sc.readRequest()
		close(read)
		<-queued
		_ = sc.fr.WriteData(2, true, []byte("x"))
		if f := next[*http2.GoAwayFrame](sc); f != nil {
			goAway <- f.ErrCode
		}
		close(goAway)
	})
	done := make(chan error, 1)
	go func() {
		_, err := c.Do(context.Background(), s.request("x"))
		done <- err
	}()
	<-read // the request was written and flushed: no writer holds the lock
	c.mu.Lock()
	p := c.pools[s.ln.Addr().String()]
	c.mu.Unlock()
	p.mu.Lock()
	cc := p.conns[0]
	p.mu.Unlock()
	cc.queued.Add(1) // a writer waiting for the lock
	close(queued)
	if code := <-goAway; code != http2.ErrCodeProtocol {
		t.Errorf("GOAWAY %v, want PROTOCOL_ERROR", code)
	}
	if err := <-done; err == nil {
		t.Error("the request in flight succeeded on a connection that broke")
	}
	cc.queued.Add(-1)
}

// TestReceiveWindowIsCredited: error answers with bodies far past our
// snippet, many in a row on one connection, well past the connection's
// 64 KiB receive window: Go's server sends only within the window, so
// without our WINDOW_UPDATEs the connection would stall.
func TestReceiveWindowIsCredited(t *testing.T) {
	srv, pool := goServer(t, nil, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write(bytes.Repeat([]byte("z"), 12<<10))
	})
	c := newTestClient(t, pool, Config{MaxConnsPerHost: 1})
	// A stalled connection fails the test rather than hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 30 { // 360 KiB in all
		req := post("x")
		req.Authority = authority(srv)
		resp, err := c.Do(ctx, req)
		if err != nil || resp.Status != http.StatusServiceUnavailable || len(resp.Body) != 256 {
			t.Fatalf("request %d: %d, %d bytes, %v", i, resp.Status, len(resp.Body), err)
		}
	}
	if n := c.Conns(); n != 1 {
		t.Errorf("%d connections, want one", n)
	}
}

// TestSettingsMidStreamOpenTheWindow: a stream stuck on a zero initial
// window goes on when the server's new SETTINGS raise it, and PINGs are
// answered with their data.
func TestSettingsMidStreamOpenTheWindow(t *testing.T) {
	const body = "waits for the window"
	got := make(chan string, 2)
	s, c := newRawServer(t, []http2.Setting{{ID: http2.SettingInitialWindowSize, Val: 0}}, func(sc *serverConn) {
		h := next[*http2.MetaHeadersFrame](sc)
		_ = sc.fr.WritePing(false, [8]byte{'a', 'm', 's', 'g'})
		if p := next[*http2.PingFrame](sc); p == nil || !p.IsAck() || p.Data != [8]byte{'a', 'm', 's', 'g'} {
			got <- "no PING ack"
			return
		}
		_ = sc.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 16})
		var b []byte
		for {
			d := next[*http2.DataFrame](sc)
			if d == nil {
				return
			}
			if b = append(b, d.Data()...); d.StreamEnded() {
				break
			}
		}
		sc.gotAndAnswer(got, b, h.StreamID)
	})
	s.sendAndCheck(t, c, body, got)
}

// TestIdleConnectionCloses: a connection without streams for IdleTimeout
// is closed.
func TestIdleConnectionCloses(t *testing.T) {
	closed := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateClosed {
			close(closed)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c := newTestClient(t, pool, Config{IdleTimeout: time.Millisecond})
	req := post("x")
	req.Authority = authority(srv)
	if resp, err := c.Do(context.Background(), req); err != nil || resp.Status != http.StatusCreated {
		t.Fatalf("%+v, %v", resp, err)
	}
	<-closed // the client hung up; only then does the server see the connection close
}

// TestZeroStreamsWaitsForSettings: a server that allows no streams at
// first gets none until its SETTINGS allow one, on the same connection.
func TestZeroStreamsWaitsForSettings(t *testing.T) {
	early := make(chan bool, 1)
	s, c := newRawServer(t, []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: 0}}, func(sc *serverConn) {
		next[*http2.SettingsFrame](sc) // our SETTINGS
		next[*http2.SettingsFrame](sc) // the ack of the server's, after which the client must hold back
		// A PING's round trip: a client that did not hold back has sent
		// its HEADERS by the time the ack comes, almost always.
		_ = sc.fr.WritePing(false, [8]byte{})
		for {
			f, err := sc.fr.ReadFrame()
			if err != nil {
				return
			}
			if _, ok := f.(*http2.MetaHeadersFrame); ok {
				early <- true
				return
			}
			if p, ok := f.(*http2.PingFrame); ok && p.IsAck() {
				break
			}
		}
		early <- false
		_ = sc.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 1})
		id, _ := sc.readRequest()
		sc.answer(id, "201", true)
		next[*http2.GoAwayFrame](sc)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		resp, err := c.Do(ctx, s.request("x"))
		if err == nil && resp.Status != 201 {
			err = errors.New(http.StatusText(resp.Status))
		}
		done <- err
	}()
	if <-early {
		cancel()
		<-done
		t.Fatal("the client opened a stream while the server allowed none")
	}
	if err := <-done; err != nil || s.conns.Load() != 1 {
		t.Fatalf("%v on %d connections", err, s.conns.Load())
	}
}
