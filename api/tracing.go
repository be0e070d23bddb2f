package api

import (
	"net/http"
	"strconv"

	"amsg/push/tracing"
)

// traceRequests gives every request a span (push/tracing) named by its
// method and route pattern, never the raw path, which carries ids; the
// span continues the caller's trace when the request carries a W3C
// traceparent. Everything the request does (its LLM calls, its pushes, its
// store writes) is inside it. Off, it
// only passes the request on.
func (s *Server) traceRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !tracing.Enabled() {
			next.ServeHTTP(w, r)
			return
		}
		method := metricMethod(r.Method)
		ctx, span := tracing.Serve(r.Context(), r.Header, method)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		r = r.WithContext(ctx)
		defer func() {
			route := s.traceRoute(r)
			span.Rename(method + " " + route)
			span.Str("http.request.method", method)
			span.Str("http.route", route)
			if v := recover(); v != nil {
				span.Fail("panic")
				span.End()
				panic(v)
			}
			span.Int("http.response.status_code", int64(rec.status))
			if rec.status >= 500 {
				span.Fail("status " + strconv.Itoa(rec.status))
			}
			span.End()
		}()
		next.ServeHTTP(rec, r)
	})
}

// traceRoute names the route that served r: chi's pattern, the API route a
// suffix match reached, or "unmatched" (the PWA's files and 404s).
func (s *Server) traceRoute(r *http.Request) string {
	if p := routePattern(r); p != "unmatched" {
		return p
	}
	if rt, ok := s.suffixRoute(r); ok {
		return "/api/v1/" + rt.name
	}
	return "unmatched"
}
