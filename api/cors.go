package api

import (
	"net/http"
	"slices"
	"strings"
)

// corsAllowHeaders is the union of the headers amsg-client and amsg-instant
// clients send, so one preflight answer serves the server endpoints and
// /instant alike.
const corsAllowHeaders = "Content-Type, Authorization, X-User-Id, X-Payload-Encrypted, " +
	"X-Encryption-Version, X-Response-Encrypted, X-Client-Token, X-Amsg-Request-Encoding, Content-Encoding, " +
	"Idempotency-Key"

// corsExposeHeaders are the response headers a cross-origin page may read
// beyond the safelisted ones: a replayed idempotent answer's mark, and the
// wait of a 409 or 429.
const corsExposeHeaders = "Idempotent-Replayed, Retry-After"

// corsPolicy decides the CORS headers. It is off when no origin is
// configured; then no Access-Control-* header is ever sent and OPTIONS is an
// unknown route, as in the standard's single-user server.
type corsPolicy struct {
	anyOrigin bool
	origins   []string // one fixed origin, or a list matched against Origin
}

// newCORSPolicy parses AMSG_CORS_ORIGIN: "" (off), "*", one origin, or a
// comma-separated list of origins.
func newCORSPolicy(spec string) corsPolicy {
	var p corsPolicy
	for o := range strings.SplitSeq(spec, ",") {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		switch o {
		case "":
		case "*":
			p.anyOrigin = true
		default:
			p.origins = append(p.origins, o)
		}
	}
	return p
}

func (p corsPolicy) enabled() bool { return p.anyOrigin || len(p.origins) > 0 }

// allowOrigin returns the Access-Control-Allow-Origin value for a request
// from origin, or "" when the request gets no CORS headers.
func (p corsPolicy) allowOrigin(origin string) string {
	switch {
	case p.anyOrigin:
		return "*"
	case len(p.origins) == 1:
		// A single configured origin is sent as is, like upstream's static value.
		return p.origins[0]
	case slices.Contains(p.origins, origin):
		return origin
	}
	return ""
}

// middleware sets the CORS headers on every response, errors and panics
// included (a cross-origin 500 without them looks like the server is down),
// and answers preflight requests with 204.
func (p corsPolicy) middleware(next http.Handler) http.Handler {
	if !p.enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if allowed := p.allowOrigin(r.Header.Get("Origin")); allowed != "" {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", allowed)
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
			h.Set("Access-Control-Max-Age", "86400")
			if allowed != "*" {
				h.Add("Vary", "Origin")
			}
		}
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}
