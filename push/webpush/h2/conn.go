package h2

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Why a stream or a connection ended.
var (
	errHeaderListTooLarge = errors.New("h2: the answer's header list is over the limit")
	errRequestHeaders     = errors.New("h2: the request's header list is over the server's limit")
	errIdle               = errors.New("h2: connection idle")
	errDrained            = errors.New("h2: connection drained after GOAWAY")
)

// conn is one HTTP/2 connection. Callers write their own requests under
// wmu; one read loop reads every frame and finishes the streams.
type conn struct {
	p  *pool
	nc net.Conn
	fr *http2.Framer
	bw *bufio.Writer

	// queued counts the writers waiting for or holding wmu: a writer that
	// leaves others queued behind it does not flush, the last one flushes
	// them all.
	queued atomic.Int32

	wmu           sync.Mutex // orders frames on the wire; guards henc, hbuf, werr, deadlineSetAt
	henc          *hpack.Encoder
	hbuf          bytes.Buffer
	werr          error
	deadlineSetAt time.Time

	mu            sync.Mutex
	streams       map[uint32]*stream
	active        int // streams reserved or open, against maxStreams
	nextID        uint32
	maxStreams    int
	sendWindow    int64 // the connection's send window
	peerInitial   int64 // the server's SETTINGS_INITIAL_WINDOW_SIZE
	maxFrame      int   // the server's SETTINGS_MAX_FRAME_SIZE
	maxHeaderList int64 // the server's SETTINGS_MAX_HEADER_LIST_SIZE; 0: unlimited
	windowGrew    chan struct{}
	goAway        bool
	err           error // why it closed; nil while open
	recvWindow    int64 // the connection's receive window left
	recvUnacked   int64 // received DATA not yet credited back
	idleSince     time.Time
	idle          *time.Timer
}

// stream is one request in flight.
type stream struct {
	id         uint32
	done       chan struct{} // closed by finishLocked
	sendWindow int64
	recv       int64 // DATA received, against our initial window
	gotFinal   bool  // a final (non-1xx) status arrived
	bodyLen    int
	resp       Response
	err        error
}

// dial opens a TLS connection with ALPN and, when the server picks h2,
// exchanges SETTINGS on it.
func (p *pool) dial(ctx context.Context) (*conn, error) {
	cfg := &p.c.cfg
	raw, err := cfg.Dial(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	tc := cfg.TLS.Clone()
	tc.ServerName = p.serverName
	tc.NextProtos = []string{"h2", "http/1.1"}
	// Small first records help a browser render early; a push's request is
	// read whole, so they would only cost records and syscalls.
	tc.DynamicRecordSizingDisabled = true
	tlsConn := tls.Client(raw, tc)
	deadline := time.Now().Add(cfg.HandshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	hctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if err := tlsConn.HandshakeContext(hctx); err != nil {
		_ = raw.Close()
		return nil, err
	}
	if tlsConn.ConnectionState().NegotiatedProtocol != http2.NextProtoTLS {
		_ = tlsConn.Close()
		p.c.markHTTP1(p.addr)
		return nil, ErrNotH2
	}
	cc := newConn(p, tlsConn)
	if err := cc.handshake(deadline); err != nil {
		_ = tlsConn.Close()
		return nil, fmt.Errorf("h2: handshake with %s: %w", p.addr, err)
	}
	return cc, nil
}

func newConn(p *pool, nc net.Conn) *conn {
	cc := &conn{
		p: p, nc: nc, bw: bufio.NewWriterSize(nc, 32<<10),
		streams: map[uint32]*stream{}, nextID: 1, maxStreams: defaultMaxStreams,
		sendWindow: initialWindow, peerInitial: initialWindow, maxFrame: 16 << 10,
		recvWindow: initialWindow,
	}
	cc.fr = http2.NewFramer(cc.bw, bufio.NewReaderSize(nc, 16<<10))
	cc.fr.SetMaxReadFrameSize(16 << 10) // our SETTINGS_MAX_FRAME_SIZE, the default
	cc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	cc.fr.MaxHeaderListSize = maxHeaderListSize
	cc.henc = hpack.NewEncoder(&cc.hbuf)
	return cc
}

// armIdle starts the idle timer of a connection the pool takes: one still
// in its handshakes, or not yet holding its dialer's stream, is not idle.
// Under mu, so that a timer that fires at once finds idle set.
func (cc *conn) armIdle() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.idleSince = time.Now()
	cc.idle = time.AfterFunc(cc.p.c.cfg.IdleTimeout, cc.closeIfIdle)
}

// handshake sends the preface and our SETTINGS and applies the server's,
// which RFC 9113 §3.4 makes its first frame, before the connection takes
// requests: so the first requests already respect its limits.
func (cc *conn) handshake(deadline time.Time) error {
	_ = cc.nc.SetDeadline(deadline)
	if _, err := cc.bw.WriteString(http2.ClientPreface); err != nil {
		return err
	}
	err := cc.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: maxHeaderListSize},
	)
	if err == nil {
		err = cc.bw.Flush()
	}
	if err != nil {
		return err
	}
	f, err := cc.fr.ReadFrame()
	if err != nil {
		return err
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		return errors.New("the server's first frame is not SETTINGS")
	}
	if _, err := cc.applySettings(sf); err != nil {
		return err
	}
	if err := cc.fr.WriteSettingsAck(); err != nil {
		return err
	}
	if err := cc.bw.Flush(); err != nil {
		return err
	}
	return cc.nc.SetDeadline(time.Time{})
}

// reserve takes a stream slot if the connection has one.
func (cc *conn) reserve() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.err != nil || cc.goAway || cc.active >= cc.maxStreams {
		return false
	}
	cc.active++
	return true
}

// release gives back a slot reserved for a request that was never sent.
func (cc *conn) release() {
	cc.mu.Lock()
	cc.active--
	if cc.active == 0 {
		cc.idleSince = time.Now()
	}
	cc.mu.Unlock()
	cc.released()
}

// released follows every freed slot: a connection drained after GOAWAY
// closes, and requests waiting for room are woken.
func (cc *conn) released() {
	cc.mu.Lock()
	drained := cc.goAway && cc.active == 0 && cc.err == nil
	cc.mu.Unlock()
	if drained {
		cc.close(errDrained)
		return
	}
	cc.p.freed()
}

// finishLocked ends a stream with its answer or err, once.
func (cc *conn) finishLocked(st *stream, err error) bool {
	if cc.streams[st.id] != st {
		return false
	}
	delete(cc.streams, st.id)
	st.err = err
	close(st.done)
	cc.active--
	if cc.active == 0 {
		cc.idleSince = time.Now()
	}
	return true
}

// roundTrip sends req on a reserved slot and waits for the answer.
func (cc *conn) roundTrip(ctx context.Context, req *Request) (Response, error) {
	st := &stream{done: make(chan struct{})}
	body := req.Body
	sent := 0
	var refused error
	err := cc.lockWrite()
	if err == nil {
		cc.mu.Lock()
		refused = cc.admitLocked(st, req)
		n := cc.takeWindowLocked(st, len(body))
		maxFrame := cc.maxFrame
		cc.mu.Unlock()
		// From here the frames must go out: the encoder's table already
		// holds what the server's decoder will.
		if refused == nil {
			err = cc.writeHeaders(st.id, req, maxFrame, len(body) == 0)
			if err == nil && n > 0 {
				err = cc.writeData(st.id, body[:n], n == len(body), maxFrame)
			}
			sent = n
		}
	}
	err = cc.unlockWrite(err)
	if refused == nil && st.id == 0 { // the connection failed before our turn to write
		refused = fmt.Errorf("%w: %w", errUnprocessed, err)
	}
	if refused != nil {
		cc.release()
		return Response{}, refused
	}
	// A write error closed the connection, which finished the stream.
	for sent < len(body) {
		cc.mu.Lock()
		if cc.streams[st.id] != st { // reset, or the connection is gone
			cc.mu.Unlock()
			break
		}
		n := cc.takeWindowLocked(st, len(body)-sent)
		maxFrame := cc.maxFrame
		var grew chan struct{}
		if n == 0 {
			if cc.windowGrew == nil {
				cc.windowGrew = make(chan struct{})
			}
			grew = cc.windowGrew
		}
		cc.mu.Unlock()
		if n == 0 {
			select {
			case <-grew:
				continue
			case <-st.done:
			case <-ctx.Done():
				cc.cancel(st)
				return Response{}, ctx.Err()
			}
			break
		}
		if err := cc.lockWrite(); err == nil {
			err = cc.writeData(st.id, body[sent:sent+n], sent+n == len(body), maxFrame)
			_ = cc.unlockWrite(err)
		} else {
			_ = cc.unlockWrite(err)
		}
		sent += n
	}
	select {
	case <-st.done:
		return st.resp, st.err
	case <-ctx.Done():
		cc.cancel(st)
		return Response{}, ctx.Err()
	}
}

// admitLocked gives st the next stream id, or says why the request cannot
// go on this connection.
func (cc *conn) admitLocked(st *stream, req *Request) error {
	switch {
	case cc.err != nil, cc.goAway, cc.nextID > maxStreamID:
		cc.goAway = cc.goAway || cc.nextID > maxStreamID
		return errUnprocessed
	case cc.maxHeaderList > 0 && headerListSize(req) > cc.maxHeaderList:
		return errRequestHeaders
	}
	st.id = cc.nextID
	cc.nextID += 2
	st.sendWindow = cc.peerInitial
	cc.streams[st.id] = st
	return nil
}

// takeWindowLocked takes up to want bytes of both send windows.
func (cc *conn) takeWindowLocked(st *stream, want int) int {
	n := max(0, min(int64(want), cc.sendWindow, st.sendWindow))
	cc.sendWindow -= n
	st.sendWindow -= n
	return int(n)
}

// cancel resets a stream whose caller stopped waiting.
func (cc *conn) cancel(st *stream) {
	cc.mu.Lock()
	ended := cc.finishLocked(st, context.Canceled)
	cc.mu.Unlock()
	if ended {
		_ = cc.writing(func() error { return cc.fr.WriteRSTStream(st.id, http2.ErrCodeCancel) })
		cc.released()
	}
}

// headerListSize is RFC 9113 §6.5.2's size of req's header list.
func headerListSize(req *Request) int64 {
	n := int64(len(":method") + len("POST") + len(":scheme") + len("https") + len(":authority") + len(req.Authority) +
		len(":path") + len(req.Path) + len("content-length") + len(strconv.AppendInt(make([]byte, 0, 20), int64(len(req.Body)), 10)) + 5*32)
	for _, f := range req.Header {
		n += int64(f.Size())
	}
	return n
}

// writeHeaders encodes req's header block and writes it as HEADERS and
// CONTINUATION frames of at most maxFrame bytes. wmu is held.
func (cc *conn) writeHeaders(id uint32, req *Request, maxFrame int, endStream bool) error {
	cc.hbuf.Reset()
	enc := cc.henc
	_ = enc.WriteField(hpack.HeaderField{Name: ":method", Value: "POST"})
	_ = enc.WriteField(hpack.HeaderField{Name: ":scheme", Value: "https"})
	_ = enc.WriteField(hpack.HeaderField{Name: ":authority", Value: req.Authority})
	_ = enc.WriteField(hpack.HeaderField{Name: ":path", Value: req.Path})
	for _, f := range req.Header {
		_ = enc.WriteField(f)
	}
	_ = enc.WriteField(hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(len(req.Body))})
	block := cc.hbuf.Bytes()
	for first := true; first || len(block) > 0; first = false {
		frag := block[:min(len(block), maxFrame)]
		block = block[len(frag):]
		var err error
		if first {
			err = cc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: frag,
				EndStream: endStream, EndHeaders: len(block) == 0})
		} else {
			err = cc.fr.WriteContinuation(id, len(block) == 0, frag)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeData writes data as DATA frames of at most maxFrame bytes. wmu is
// held.
func (cc *conn) writeData(id uint32, data []byte, endStream bool, maxFrame int) error {
	for {
		n := min(len(data), maxFrame)
		if err := cc.fr.WriteData(id, endStream && n == len(data), data[:n]); err != nil {
			return err
		}
		data = data[n:]
		if len(data) == 0 {
			return nil
		}
	}
}

// lockWrite takes the write lock for frames; on the connection's earlier
// write error, which it returns, the caller writes nothing. unlockWrite
// follows, always.
func (cc *conn) lockWrite() error {
	cc.queued.Add(1)
	cc.wmu.Lock()
	if cc.werr != nil {
		return cc.werr
	}
	// The deadline bounds a write to a server that stopped reading;
	// renewing it once a second keeps it cheap.
	if now := time.Now(); now.Sub(cc.deadlineSetAt) > time.Second {
		cc.deadlineSetAt = now
		_ = cc.nc.SetWriteDeadline(now.Add(writeTimeout))
	}
	return nil
}

// unlockWrite flushes what was written, unless another writer queued
// behind this one, whose flush then carries both: requests that arrive
// together leave in one TLS record and one syscall. A write error (err,
// or the flush's) closes the connection and is returned.
func (cc *conn) unlockWrite(err error) error {
	if cc.queued.Add(-1) == 0 && err == nil {
		err = cc.bw.Flush()
	}
	if err != nil && cc.werr == nil {
		cc.werr = err
	}
	cc.wmu.Unlock()
	if err != nil {
		cc.close(err)
	}
	return err
}

// writing writes the frames of write with the write lock.
func (cc *conn) writing(write func() error) error {
	err := cc.lockWrite()
	if err == nil {
		err = write()
	}
	return cc.unlockWrite(err)
}

// close ends the connection and fails its streams with err.
func (cc *conn) close(err error) {
	cc.mu.Lock()
	closed := cc.shutLocked(err)
	cc.mu.Unlock()
	if closed {
		cc.closed()
	}
}

// shutLocked marks the connection closed and fails its streams.
func (cc *conn) shutLocked(err error) bool {
	if cc.err != nil {
		return false
	}
	cc.err = err
	for _, st := range cc.streams {
		cc.finishLocked(st, fmt.Errorf("h2: connection to %s: %w", cc.p.addr, err))
	}
	cc.growWindowLocked()
	return true
}

// closed releases what a shut connection holds.
func (cc *conn) closed() {
	cc.idle.Stop()
	_ = cc.nc.Close()
	cc.p.remove(cc)
}

// closeIfIdle is the idle timer's: a connection without streams for
// IdleTimeout closes.
func (cc *conn) closeIfIdle() {
	timeout := cc.p.c.cfg.IdleTimeout
	cc.mu.Lock()
	idleFor := time.Since(cc.idleSince)
	closed := cc.active == 0 && idleFor >= timeout && cc.shutLocked(errIdle)
	open := cc.err == nil
	if cc.active > 0 {
		idleFor = 0
	}
	cc.mu.Unlock()
	switch {
	case closed:
		cc.closed()
	case open:
		cc.idle.Reset(timeout - idleFor)
	}
}

// growWindowLocked wakes the writers waiting for a send window.
func (cc *conn) growWindowLocked() {
	if cc.windowGrew != nil {
		close(cc.windowGrew)
		cc.windowGrew = nil
	}
}

// readLoop reads the server's frames until the connection ends.
func (cc *conn) readLoop() {
	err := cc.readFrames()
	var ce http2.ConnectionError
	if errors.As(err, &ce) {
		// Flushed here, not left to a writer queued behind: the connection
		// closes next, before that writer's flush.
		_ = cc.writing(func() error {
			if err := cc.fr.WriteGoAway(0, http2.ErrCode(ce), nil); err != nil {
				return err
			}
			return cc.bw.Flush()
		})
	}
	cc.close(err)
}

func (cc *conn) readFrames() error {
	for {
		f, err := cc.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				cc.resetStream(se.StreamID, se.Code, fmt.Errorf("h2: %w", se))
				continue
			}
			return err
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			err = cc.onHeaders(f)
		case *http2.DataFrame:
			err = cc.onData(f)
		case *http2.RSTStreamFrame:
			err = cc.onReset(f)
		case *http2.SettingsFrame:
			err = cc.onSettings(f)
		case *http2.PingFrame:
			if !f.IsAck() {
				data := f.Data
				err = cc.writing(func() error { return cc.fr.WritePing(true, data) })
			}
		case *http2.GoAwayFrame:
			cc.onGoAway(f)
		case *http2.WindowUpdateFrame:
			err = cc.onWindowUpdate(f)
		case *http2.PushPromiseFrame: // we sent ENABLE_PUSH 0
			err = http2.ConnectionError(http2.ErrCodeProtocol)
		}
		if err != nil {
			return err
		}
	}
}

// streamLocked returns the stream a server frame names: nil for one we
// ended already, whose late frames are ignored, and a connection error for
// an id we never opened, which a server frame may not name (RFC 9113 §5.1:
// idle streams).
func (cc *conn) streamLocked(id uint32) (*stream, error) {
	if st := cc.streams[id]; st != nil {
		return st, nil
	}
	if id%2 == 0 || id >= cc.nextID {
		return nil, http2.ConnectionError(http2.ErrCodeProtocol)
	}
	return nil, nil
}

// resetStream ends a stream with a stream error and tells the server.
func (cc *conn) resetStream(id uint32, code http2.ErrCode, err error) {
	cc.mu.Lock()
	ended := false
	if st := cc.streams[id]; st != nil {
		ended = cc.finishLocked(st, err)
	}
	cc.mu.Unlock()
	if ended {
		_ = cc.writing(func() error { return cc.fr.WriteRSTStream(id, code) })
		cc.released()
	}
}

func (cc *conn) onHeaders(f *http2.MetaHeadersFrame) error {
	id := f.StreamID
	cc.mu.Lock()
	st, err := cc.streamLocked(id)
	if st == nil {
		cc.mu.Unlock()
		return err
	}
	var fail error
	code := http2.ErrCodeProtocol
	switch {
	case f.Truncated:
		fail, code = errHeaderListTooLarge, http2.ErrCodeCancel
	case st.gotFinal: // trailers
		if !f.StreamEnded() {
			fail = errors.New("h2: a second header block without END_STREAM")
		}
	default:
		status, err := strconv.Atoi(f.PseudoValue("status"))
		switch {
		case err != nil || status < 100 || status > 999:
			fail = fmt.Errorf("h2: malformed :status %q", f.PseudoValue("status"))
		case status < 200 && (status == 101 || f.StreamEnded()):
			fail = fmt.Errorf("h2: interim status %d ends the stream or switches protocols", status)
		case status >= 200:
			st.gotFinal = true
			st.resp.Status = status
			for _, hf := range f.RegularFields() {
				if hf.Name == "retry-after" {
					st.resp.RetryAfter = hf.Value
					break
				}
			}
		}
	}
	if fail != nil {
		cc.mu.Unlock()
		cc.resetStream(id, code, fail)
		return nil
	}
	ended := st.gotFinal && f.StreamEnded() && cc.finishLocked(st, nil)
	cc.mu.Unlock()
	if ended {
		cc.released()
	}
	return nil
}

func (cc *conn) onData(f *http2.DataFrame) error {
	n := int64(f.Length) // padding included, as flow control counts it
	id := f.StreamID
	cc.mu.Lock()
	if n > cc.recvWindow {
		cc.mu.Unlock()
		return http2.ConnectionError(http2.ErrCodeFlowControl)
	}
	cc.recvWindow -= n
	cc.recvUnacked += n
	var credit int64
	if cc.recvUnacked >= initialWindow/2 {
		credit = cc.recvUnacked
		cc.recvWindow += credit
		cc.recvUnacked = 0
	}
	st, err := cc.streamLocked(id)
	if err != nil {
		cc.mu.Unlock()
		return err
	}
	var fail error
	code := http2.ErrCodeProtocol
	ended, reset := false, false
	switch {
	case st == nil: // a stream we ended: its DATA counted for the connection's window alone
	case !st.gotFinal:
		fail = errors.New("h2: DATA before the answer's headers")
	case st.recv+n > initialWindow:
		fail, code = errors.New("h2: DATA past the stream's window"), http2.ErrCodeFlowControl
	default:
		st.recv += n
		data := f.Data()
		limit := maxResponseBody
		if st.resp.Status/100 != 2 {
			limit = cc.p.c.cfg.BodySnippet
			st.resp.Body = append(st.resp.Body, data[:min(len(data), limit-len(st.resp.Body))]...)
		}
		st.bodyLen += len(data)
		switch {
		case f.StreamEnded():
			ended = cc.finishLocked(st, nil)
		case st.bodyLen >= limit: // all we keep: the rest may go
			ended = cc.finishLocked(st, nil)
			reset = ended
		}
	}
	cc.mu.Unlock()
	if credit > 0 || reset {
		err = cc.writing(func() error {
			if credit > 0 {
				if err := cc.fr.WriteWindowUpdate(0, uint32(credit)); err != nil {
					return err
				}
			}
			if reset {
				return cc.fr.WriteRSTStream(id, http2.ErrCodeCancel)
			}
			return nil
		})
	}
	if fail != nil {
		cc.resetStream(id, code, fail)
	}
	if ended {
		cc.released()
	}
	return err
}

func (cc *conn) onReset(f *http2.RSTStreamFrame) error {
	cc.mu.Lock()
	st, err := cc.streamLocked(f.StreamID)
	if st == nil {
		cc.mu.Unlock()
		return err
	}
	switch {
	case f.ErrCode == http2.ErrCodeRefusedStream:
		err = fmt.Errorf("%w (REFUSED_STREAM)", errUnprocessed)
	case f.ErrCode == http2.ErrCodeNo && st.gotFinal: // the answer is whole; stop sending (RFC 9113 §8.1)
	default:
		err = fmt.Errorf("h2: the server reset the stream: %v", f.ErrCode)
	}
	ended := cc.finishLocked(st, err)
	cc.mu.Unlock()
	if ended {
		cc.released()
	}
	return nil
}

func (cc *conn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	var applyErr error
	more := false
	err := cc.writing(func() error {
		if more, applyErr = cc.applySettings(f); applyErr != nil {
			return nil
		}
		return cc.fr.WriteSettingsAck()
	})
	if applyErr != nil {
		return applyErr
	}
	if more {
		cc.p.freed()
	}
	return err
}

// applySettings applies the server's SETTINGS; more reports room for more
// streams. wmu is held (or the read loop has not started).
func (cc *conn) applySettings(f *http2.SettingsFrame) (more bool, err error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	err = f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		switch s.ID {
		case http2.SettingEnablePush: // a server may only send 0 (RFC 9113 §6.5.2)
			if s.Val != 0 {
				return http2.ConnectionError(http2.ErrCodeProtocol)
			}
		case http2.SettingMaxConcurrentStreams:
			v := int(min(s.Val, maxStreamsPerConn))
			more = more || v > cc.maxStreams
			cc.maxStreams = v
		case http2.SettingInitialWindowSize:
			delta := int64(s.Val) - cc.peerInitial
			for _, st := range cc.streams {
				if st.sendWindow += delta; st.sendWindow > maxWindow {
					return http2.ConnectionError(http2.ErrCodeFlowControl)
				}
			}
			cc.peerInitial = int64(s.Val)
			if delta > 0 {
				cc.growWindowLocked()
			}
		case http2.SettingMaxFrameSize:
			cc.maxFrame = int(s.Val)
		case http2.SettingMaxHeaderListSize:
			cc.maxHeaderList = int64(s.Val)
		case http2.SettingHeaderTableSize:
			cc.henc.SetMaxDynamicTableSizeLimit(s.Val)
		}
		return nil
	})
	return more, err
}

func (cc *conn) onGoAway(f *http2.GoAwayFrame) {
	cc.mu.Lock()
	cc.goAway = true
	for id, st := range cc.streams {
		if id > f.LastStreamID {
			cc.finishLocked(st, fmt.Errorf("%w (GOAWAY %v)", errUnprocessed, f.ErrCode))
		}
	}
	cc.mu.Unlock()
	cc.released()
}

func (cc *conn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	inc := int64(f.Increment)
	cc.mu.Lock()
	if f.StreamID == 0 {
		if cc.sendWindow += inc; cc.sendWindow > maxWindow {
			cc.mu.Unlock()
			return http2.ConnectionError(http2.ErrCodeFlowControl)
		}
	} else if st := cc.streams[f.StreamID]; st != nil {
		if st.sendWindow += inc; st.sendWindow > maxWindow {
			cc.mu.Unlock()
			cc.resetStream(f.StreamID, http2.ErrCodeFlowControl, errors.New("h2: the stream's window overflowed"))
			return nil
		}
	}
	cc.growWindowLocked()
	cc.mu.Unlock()
	return nil
}
