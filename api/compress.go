package api

import (
	"net/http"

	"github.com/go-chi/chi/v5/middleware"
)

// compressedTypes are the answers gzipped for a client that accepts it: the
// page, the worker and their files, and JSON. Server-sent events are not
// (each event must leave at once), nor /metrics, which compresses itself.
var compressedTypes = []string{
	"text/html", "text/css", "text/javascript", "application/javascript",
	"application/json", "application/manifest+json", "image/svg+xml",
}

// compressAnswers gzips compressedTypes; level 5 takes most of the gain for
// a fraction of the CPU of level 9.
func compressAnswers(next http.Handler) http.Handler {
	compress := middleware.Compress(5, compressedTypes...)(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		compress.ServeHTTP(flusher{w}, r)
	})
}

// flusher lets chi's compressor flush through writers that only unwrap
// (deadlineWriter): it looks for http.Flusher itself, and without one a
// server-sent event would wait in a buffer.
type flusher struct{ http.ResponseWriter }

func (f flusher) Flush()                      { _ = http.NewResponseController(f.ResponseWriter).Flush() }
func (f flusher) Unwrap() http.ResponseWriter { return f.ResponseWriter }
