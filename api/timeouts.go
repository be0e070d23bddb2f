package api

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// Defaults of Config's timeouts.
const (
	// DefaultBodyReadTimeout bounds how long a client may take to send a
	// request body: the largest body (a 16 MiB client-state write) at about
	// 4 Mbit/s.
	DefaultBodyReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds how long a response may take to leave once
	// it starts; an event stream renews its deadline with every frame.
	DefaultWriteTimeout = 60 * time.Second
)

// errRequestTimeout answers a request whose body did not arrive in time.
// The connection is closed after it: what is left of the body is unknown.
var errRequestTimeout = newError(http.StatusRequestTimeout, "REQUEST_TIMEOUT", "请求体未在限定时间内送达")

// deadlines bounds every request's I/O on its connection. A request that
// declares a body gets a read deadline when it arrives, which holds until
// the body has been read to its end, so a body that never comes ends in
// 408 (or, on a route that does not read it, in the connection closing when
// the server drains it) instead of holding the connection. The deadline is
// lifted only at the body's end: net/http reads the connection in the
// background while a handler runs, and an expired read deadline there would
// cancel the request. A response gets a write deadline when its first byte
// is written, so a client that stops reading is dropped.
func (s *Server) deadlines(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.Body != nil && r.Body != http.NoBody {
			_ = rc.SetReadDeadline(time.Now().Add(s.cfg.Limits.BodyReadTimeout))
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		}
		dw := &deadlineWriter{ResponseWriter: w, rc: rc, timeout: s.cfg.Limits.WriteTimeout}
		next.ServeHTTP(dw, r)
		if dw.failed {
			s.log.DebugContext(r.Context(), "response not delivered: the client stopped reading or went away",
				"method", metricMethod(r.Method), "path", r.URL.Path, "written", dw.written)
		}
	})
}

// deadlineBody lifts the read deadline once the body has been read to its
// end.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.once.Do(func() { _ = b.rc.SetReadDeadline(time.Time{}) })
	}
	return n, err
}

// deadlineWriter sets the response's write deadline on its first byte and
// remembers whether a write failed. Unwrap keeps http.ResponseController
// (flushing, deadlines) working through it.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	started bool
	failed  bool
	written int64
}

func (d *deadlineWriter) start() {
	if !d.started {
		d.started = true
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
