package api

import (
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strings"

	"amsg/push/errcode"
)

// Request bodies may come gzipped (Content-Encoding: gzip, upstream's
// gzip-request-body; /instant and /continue also take the SDK's
// X-Amsg-Request-Encoding: gzip). The body is inflated as the handler reads
// it, so every route's size limit (readBody) counts inflated bytes and a
// gzip bomb stops at the limit; the compressed bytes are bounded by the
// largest limit, which stops a stream of empty gzip members.

// bodyEncodingFeature advertises gzip request bodies; decodeRequestBody,
// a middleware of every route, does the work.
func (s *Server) bodyEncodingFeature() feature {
	return feature{capabilities: []string{"gzip-request-body"}}
}

var (
	errUnsupportedContentEncoding = fail(errcode.UnsupportedContentEncoding)
	errInvalidContentEncoding     = fail(errcode.InvalidContentEncoding)
)

// decodeRequestBody inflates a Content-Encoding: gzip request body and
// refuses any other encoding with 415. A request without a body is left
// alone whatever it claims.
func (s *Server) decodeRequestBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		encoding := strings.ToLower(strings.TrimSpace(strings.Join(r.Header.Values("Content-Encoding"), ",")))
		if encoding == "" || encoding == "identity" || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if encoding != "gzip" && encoding != "x-gzip" {
			s.writeError(w, r, errUnsupportedContentEncoding)
			return
		}
		r.Body = &gunzipBody{src: http.MaxBytesReader(w, r.Body, max(s.cfg.MaxBodyBytes, s.cfg.MaxClientStateBodyBytes))}
		r.ContentLength = -1
		r.Header.Del("Content-Encoding")
		r.Header.Del("X-Amsg-Request-Encoding") // the same gzip, not a second layer
		next.ServeHTTP(w, r)
	})
}

// gunzipBody decompresses a request body. The gzip header is read on the
// first Read, so under readBody's deadline; readBody's limit then bounds
// the decompressed bytes. An error of the compressed data itself (not of
// reading src) is a contentEncodingError.
type gunzipBody struct {
	src    io.ReadCloser
	srcErr error // the last error src returned
	zr     *gzip.Reader
}

// contentEncodingError is a body that is not valid gzip.
type contentEncodingError struct{ err error }

func (e *contentEncodingError) Error() string { return "api: request body: " + e.err.Error() }
func (e *contentEncodingError) Unwrap() error { return e.err }

func (g *gunzipBody) Read(p []byte) (int, error) {
	if g.zr == nil {
		zr, err := gzip.NewReader(srcReader{g})
		if err != nil {
			return 0, g.classify(err)
		}
		g.zr = zr
	}
	n, err := g.zr.Read(p)
	return n, g.classify(err)
}

// classify passes io.EOF and src's own errors (a body over its limit, a
// read deadline) on as they are and marks the rest as the encoding's.
func (g *gunzipBody) classify(err error) error {
	if err == nil || err == io.EOF || (g.srcErr != nil && errors.Is(err, g.srcErr)) {
		return err
	}
	return &contentEncodingError{err}
}

func (g *gunzipBody) Close() error { return g.src.Close() }

// srcReader reads g.src and remembers its errors.
type srcReader struct{ g *gunzipBody }

func (r srcReader) Read(p []byte) (int, error) {
	n, err := r.g.src.Read(p)
	if err != nil && err != io.EOF {
		r.g.srcErr = err
	}
	return n, err
}
