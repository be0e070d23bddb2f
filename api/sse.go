package api

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// DefaultKeepAlive is how often an idle event stream gets a keepalive
// comment, the standard's sse.keepaliveMs: often enough that proxies and
// mobile networks do not cut a stream while the model thinks.
const DefaultKeepAlive = time.Second

// sseWriteTimeout bounds one frame's write: a client that stops reading
// is treated as gone and its pushes go by Web Push only.
const sseWriteTimeout = 10 * time.Second

// sseStream writes the standard's server-sent events: `event: payload`,
// `event: error` and `event: done` frames and `: keepalive` comments, each
// flushed at once. Once the client has gone (its connection closed, or a
// write failed), frames are dropped; the caller keeps working and relies on
// Web Push. It is safe for concurrent use.
type sseStream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	ctx context.Context // the request's: once it ends the client is gone

	mu     sync.Mutex
	gone   bool
	closed chan struct{} // closed by close: no more frames, keepalives stop
	wg     sync.WaitGroup
}

// startSSE sends the stream's headers and a first keepalive at once,
// before any work, then a keepalive every interval until close.
func startSSE(w http.ResponseWriter, r *http.Request, interval time.Duration) *sseStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	if r.ProtoMajor == 1 {
		h.Set("Connection", "keep-alive") // connection-specific: HTTP/2 forbids it
	}
	w.WriteHeader(http.StatusOK)
	s := &sseStream{w: w, rc: http.NewResponseController(w), ctx: r.Context(), closed: make(chan struct{})}
	s.write(": keepalive\n\n")
	s.wg.Go(func() { s.keepAlive(r.Context(), interval) })
	return s
}

func (s *sseStream) keepAlive(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-s.closed:
			return
		case <-ctx.Done(): // the client went away
			s.mu.Lock()
			s.gone = true
			s.mu.Unlock()
			return
		case <-tick.C:
			s.write(": keepalive\n\n")
		}
	}
}

// event writes one frame; it reports whether the client got it (as far as
// a successful write and flush can tell).
func (s *sseStream) event(name string, data []byte) bool {
	return s.write("event: " + name + "\ndata: " + string(data) + "\n\n")
}

func (s *sseStream) write(frame string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.closed:
		return false
	default:
	}
	if s.gone || s.ctx.Err() != nil {
		// A write to a connection the client closed may still succeed
		// into the socket's buffer: never count such a frame delivered, as
		// its Web Push backup then skips the streaming device.
		s.gone = true
		return false
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	if _, err := s.w.Write([]byte(frame)); err != nil {
		s.gone = true
		return false
	}
	if err := s.rc.Flush(); err != nil {
		s.gone = true
		return false
	}
	return true
}

// close stops the keepalives; later frames are dropped. The stream's end
// gets one more frame's time to leave: a zero deadline would let a stalled
// reader hold the connection, and the next request on it sets its own.
func (s *sseStream) close() {
	s.mu.Lock()
	select {
	case <-s.closed:
	default:
		close(s.closed)
		_ = s.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	}
	s.mu.Unlock()
	s.wg.Wait()
}
