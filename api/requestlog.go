package api

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// logRequests logs every request at debug level once it is answered: the
// method, chi's route pattern (never the raw path, which may carry ids),
// the status, the duration in milliseconds, the client address the rate
// limits count (limits.go) and, when the request names a user, a digest of
// the id so one user's requests can be followed without the id in the log.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.warnUntrustedForward(r)
		if !s.log.Enabled(r.Context(), slog.LevelDebug) {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		attrs := []slog.Attr{
			slog.String("method", r.Method),
			slog.String("route", routePattern(r)),
			slog.Int("status", rec.status),
			slog.Float64("durationMs", float64(time.Since(start).Microseconds())/1000),
			slog.String("client", clientAddress(r, s.cfg.Limits.TrustedProxies).String()),
		}
		if id := strings.TrimSpace(r.Header.Get("X-User-Id")); id != "" {
			attrs = append(attrs, slog.String("user", userDigest(id)))
		}
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "request", attrs...)
	})
}

// warnUntrustedForward says once that requests come through a proxy amsg
// does not trust: every client behind it then has the proxy's address, and
// all of them share one rate limit.
func (s *Server) warnUntrustedForward(r *http.Request) {
	if len(s.cfg.Limits.TrustedProxies) > 0 || r.Header.Get("X-Forwarded-For") == "" {
		return
	}
	s.untrustedForward.Do(func() {
		s.log.Warn("requests carry X-Forwarded-For but AMSG_TRUSTED_PROXIES is not set: every client behind the proxy counts as the proxy's address and shares its rate limit; set AMSG_TRUSTED_PROXIES to the proxy's address",
			"peer", clientAddress(r, nil).String())
	})
}

// routePattern is the chi pattern that served r, or "unmatched" (the
// suffix-matched routes, the PWA's files and 404s).
func routePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		return rc.RoutePattern()
	}
	return "unmatched"
}

// userDigest stands for a user id in logs: the first 12 hex digits of its
// SHA-256.
func userDigest(userID string) string {
	sum := sha256.Sum256([]byte(userID))
	return hex.EncodeToString(sum[:6])
}
