package api

import "github.com/go-chi/chi/v5/middleware"

// compressedTypes are the answers gzipped for a client that accepts it: the
// page, the worker and their files, and JSON. Server-sent events are not
// (each event must leave at once), nor /metrics, which compresses itself.
var compressedTypes = []string{
	"text/html", "text/css", "text/javascript", "application/javascript",
	"application/json", "application/manifest+json", "image/svg+xml",
}

// compressAnswers gzips compressedTypes; level 5 takes most of the gain for
// a fraction of the CPU of level 9.
var compressAnswers = middleware.Compress(5, compressedTypes...)
