package api

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"amsg/push/errcode"
)

// Defaults of Config's timeouts.
const (
	// DefaultBodyReadTimeout bounds how long a client may take to send a
	// request body: the largest body (a 16 MiB client-state write) at about
	// 4 Mbit/s.
	DefaultBodyReadTimeout = 30 * time.Second
	// DefaultBodyStartTimeout bounds how long a request that carried no
	// credential may take to start its body (issue 22: bodies that never
	// came held a descriptor each for the whole body timeout).
	DefaultBodyStartTimeout = 5 * time.Second
	// DefaultWriteTimeout bounds how long a response may take to leave once
	// it starts; an event stream renews its deadline with every frame.
	DefaultWriteTimeout = 60 * time.Second
)

// errRequestTimeout answers a request whose body did not arrive in time.
// The connection is closed after it: what is left of the body is unknown.
var errRequestTimeout = fail(errcode.RequestTimeout)

// deadlines bounds every request's I/O on its connection. A request that
// declares a body gets a read deadline when it arrives: the body must start
// within the body start timeout, and once it has started, or the request
// proved a credential (serve), arrive whole within the body timeout of the
// request's arrival. It holds until the body has been read to its end, so a
// body that never comes ends in 408 instead of holding the connection. The
// deadline is lifted only at the body's end: net/http reads the connection
// in the background while a handler runs, and an expired read deadline
// there would cancel the request. A response written before its request's
// body was read to the end (a refusal from the headers: 401, 429, …) closes
// the connection, so the server answers at once rather than first draining
// a body that may never come. A response gets a write deadline when its
// first byte is written, so a client that stops reading is dropped.
func (s *Server) deadlines(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		var body *deadlineBody
		if r.Body != nil && r.Body != http.NoBody {
			arrived := time.Now()
			_ = rc.SetReadDeadline(arrived.Add(min(s.cfg.Limits.BodyStartTimeout, s.cfg.Limits.BodyReadTimeout)))
			body = &deadlineBody{ReadCloser: r.Body, rc: rc, full: arrived.Add(s.cfg.Limits.BodyReadTimeout)}
			r.Body = body
		}
		dw := &deadlineWriter{ResponseWriter: w, rc: rc, timeout: s.cfg.Limits.WriteTimeout, body: body}
		next.ServeHTTP(dw, r)
		if dw.failed {
			s.log.DebugContext(r.Context(), "response not delivered: the client stopped reading or went away",
				"method", metricMethod(r.Method), "path", r.URL.Path, "written", dw.written)
		}
	})
}

// deadlineBody extends the read deadline to full once the body has started
// or the request proved a credential, and lifts it once the body has been
// read to its end.
type deadlineBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	full     time.Time // the body timeout from the request's arrival
	extended sync.Once
	ended    sync.Once
	sawEOF   atomic.Bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.extend()
	}
	if errors.Is(err, io.EOF) {
		b.ended.Do(func() {
			b.sawEOF.Store(true)
			_ = b.rc.SetReadDeadline(time.Time{})
		})
	}
	return n, err
}

// extend gives the body its full timeout.
func (b *deadlineBody) extend() {
	b.extended.Do(func() {
		if !b.sawEOF.Load() {
			_ = b.rc.SetReadDeadline(b.full)
		}
	})
}

// extendBodyDeadline gives r's body its full timeout: r proved a
// credential.
func extendBodyDeadline(r *http.Request) {
	if b, ok := r.Body.(*deadlineBody); ok {
		b.extend()
	}
}

// deadlineWriter sets the response's write deadline on its first byte and
// remembers whether a write failed. Unwrap keeps http.ResponseController
// (flushing, deadlines) working through it.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	body    *deadlineBody // nil for a request without a body
	started bool
	failed  bool
	written int64
}

func (d *deadlineWriter) start() {
	if !d.started {
		d.started = true
		if d.body != nil && !d.body.sawEOF.Load() {
			// Answered before its body: close without reading the rest,
			// which net/http would otherwise drain first (up to the read
			// deadline) while holding the connection.
			d.Header().Set("Connection", "close")
			_ = d.rc.SetReadDeadline(time.Now())
		}
		_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	}
}

func (d *deadlineWriter) WriteHeader(code int) {
	d.start()
	d.ResponseWriter.WriteHeader(code)
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.start()
	n, err := d.ResponseWriter.Write(p)
	d.written += int64(n)
	if err != nil {
		d.failed = true
	}
	return n, err
}

func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// isReadTimeout reports whether a body read failed on its deadline.
func isReadTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
