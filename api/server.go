// Package api is amsg's HTTP surface: the ReiStandard Active Messaging
// endpoints under /api/v1/, health and metrics, and the embedded PWA and
// service worker. Handlers return errors; writeError turns them into the
// standard's envelope.
package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"amsg/builders"
	"amsg/llm"
	"amsg/push/courier"
	"amsg/push/webpush"
	"amsg/scheduler"
	"amsg/scheduler/webhook"
	"amsg/store"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// Config is the API's flat configuration; cmd/amsg fills it from flags and
// AMSG_* environment variables.
type Config struct {
	// ServerVersion is reported by GET /capabilities.
	ServerVersion string
	// ClientToken, when set, is the shared secret every API request must
	// carry in X-Client-Token.
	ClientToken string
	// TokenSigningKey, when set, makes /instant and /continue require an
	// HMAC-signed Bearer token.
	TokenSigningKey string
	// CORSOrigin is "" (no CORS headers), "*", an origin, or a
	// comma-separated list of origins.
	CORSOrigin string
	// MaxBodyBytes bounds request bodies (default 1 MiB).
	MaxBodyBytes int64
	// MaxClientStateBodyBytes bounds PUT /client-state bodies, which carry
	// up to 200 values of up to 5 MiB each (default 16 MiB).
	MaxClientStateBodyBytes int64
	// AllowPrivateEndpoints accepts http:// and loopback/private push
	// endpoints (development and tests only).
	AllowPrivateEndpoints bool
	Logger                *slog.Logger
	Now                   func() time.Time

	// PageURL is the companion page's origin; with it content pushes are
	// Declarative Web Push messages (builders.Builder.PageURL).
	PageURL string

	// ApplePushRefused says the sender refuses Apple's push service (the
	// VAPID subject is a placeholder); /capabilities then lacks
	// "apple-web-push" and warns.
	ApplePushRefused bool
	// AdminToken, when set, enables the operator API under
	// /api/v1/admin/ for requests that carry it as a Bearer token.
	AdminToken string
	// Limits bound what one caller can make the server do (limits.go).
	Limits Limits
	// LLMPolicy vets the apiUrl a request or task gives (400
	// INVALID_API_URL); the LLM client enforces it again when it dials.
	LLMPolicy llm.URLPolicy
	// WebhookPolicy vets the receivers the operator registers (400
	// INVALID_WEBHOOK_URL); the webhook sender enforces it again when it
	// dials.
	WebhookPolicy webhook.URLPolicy
}

// Deps are the components the handlers use.
type Deps struct {
	// Store is the database; /healthz pings it.
	Store *store.Store
	// Courier delivers every push.
	Courier *courier.Courier
	// Scheduler delivers tasks; the task endpoints need it.
	Scheduler *scheduler.Scheduler
	// Broadcasts sends the operator's broadcasts (SendBroadcast is their
	// sender); required with Config.AdminToken.
	Broadcasts *scheduler.Broadcasts
	// Metrics receives the HTTP metrics; /metrics serves its gatherer.
	Metrics *prometheus.Registry
	// Web serves the PWA's files (GET and HEAD only); nil serves none.
	Web http.Handler
	// ServiceWorker serves /sw.js; nil serves none.
	ServiceWorker http.Handler
	// Instant serves /instant, /continue and /sessions; nil serves none.
	Instant *Instant
	// AdminPage serves the operator page at /admin when Config.AdminToken
	// is set; nil serves none.
	AdminPage http.Handler
}

// handlerFunc is an endpoint: it writes a success response or returns an
// error for writeError.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// route is one endpoint of the standard's surface. It is served at
// /api/v1/<name> and, like the standard's single-user server, at any path
// that ends in /<name> (trailing slashes ignored), so clients configured with
// any base URL work.
type route struct {
	method string
	name   string
	auth   authMode
	handle handlerFunc
}

// feature is a group of routes plus the capability strings GET
// /capabilities advertises for them.
type feature struct {
	capabilities []string
	routes       []route
}

// Server is the HTTP handler of amsg.
type Server struct {
	cfg        Config
	deps       Deps
	log        *slog.Logger
	now        func() time.Time
	tokens     tokenComparer
	cors       corsPolicy
	endpoints  webpush.EndpointPolicy
	builder    builders.Builder
	routes     []route // longest name first, for suffix matching
	features   []string
	metrics    *httpMetrics
	rounds     *roundGuard
	limits     *callerLimits // nil when the rate limits are off
	stateReads *byteBudget   // the memory of GET /client-state answers
	proofs     *tokenProofs
	health     healthCheck
	handler    http.Handler

	untrustedForward sync.Once // requestlog.go
}

// New builds the server.
func New(cfg Config, deps Deps) (*Server, error) {
	s := &Server{
		cfg:       cfg,
		deps:      deps,
		log:       cmp.Or(cfg.Logger, slog.Default()),
		now:       cfg.Now,
		tokens:    newTokenComparer(),
		cors:      newCORSPolicy(cfg.CORSOrigin),
		endpoints: webpush.EndpointPolicy{AllowPrivate: cfg.AllowPrivateEndpoints},
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.builder = builders.Builder{Now: s.now, PageURL: cfg.PageURL}
	if deps.Store == nil || deps.Courier == nil {
		return nil, errors.New("api: a store and a dispatcher are required")
	}
	if cfg.AdminToken != "" && deps.Broadcasts == nil {
		return nil, errors.New("api: the operator API needs Broadcasts")
	}
	if s.cfg.MaxBodyBytes <= 0 {
		s.cfg.MaxBodyBytes = 1 << 20
	}
	if s.cfg.MaxClientStateBodyBytes <= 0 {
		s.cfg.MaxClientStateBodyBytes = 16 << 20
	}
	s.cfg.Limits = s.cfg.Limits.withDefaults()
	var reg prometheus.Registerer
	if deps.Metrics != nil {
		m, err := newHTTPMetrics(deps.Metrics)
		if err != nil {
			return nil, fmt.Errorf("api: register metrics: %w", err)
		}
		s.metrics, reg = m, deps.Metrics
	}
	rounds, err := newRoundGuard(s.cfg.Limits, s.log, reg)
	if err != nil {
		return nil, fmt.Errorf("api: register metrics: %w", err)
	}
	s.rounds = rounds
	s.limits = newCallerLimits(s.cfg.Limits, s.now)
	s.stateReads = &byteBudget{max: s.cfg.Limits.ClientStateReadBudget}
	s.proofs = newTokenProofs(deps.Store, s.cfg.Limits.TokenProofMaxAge, s.now, s.log)
	for _, f := range []feature{
		s.metaFeature(),
		s.userKeyFeature(),
		s.subscriptionFeature(),
		s.devicesFeature(),
		s.taskFeature(),
		s.clientStateFeature(),
		s.cloudDataFeature(),
		s.outboxFeature(),
		s.tenantFeature(),
		s.instantFeature(),
		s.bodyEncodingFeature(),
		s.preferencesFeature(),
		s.interruptsFeature(),
		s.credentialsFeature(),
		s.messageEventsFeature(),
		s.webhooksFeature(),
	} {
		for _, c := range f.capabilities {
			if !slices.Contains(s.features, c) { // tasks and instant both take llmExtraBody
				s.features = append(s.features, c)
			}
		}
		s.routes = append(s.routes, f.routes...)
	}
	slices.SortStableFunc(s.routes, func(a, b route) int { return len(b.name) - len(a.name) })
	s.handler = s.deadlines(s.cors.middleware(s.rateLimit(s.recoverPanics(s.mux()))))
	return s, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

func (s *Server) mux() http.Handler {
	r := chi.NewRouter()
	// Compression first: the writers the later middleware wrap around it
	// unwrap to it, and its Flush reaches the connection's, which server-sent
	// events need.
	r.Use(s.traceRequests, compressAnswers, s.logRequests)
	if s.metrics != nil {
		r.Use(s.metrics.middleware)
	}
	r.Use(s.decodeRequestBody)
	for _, rt := range s.routes {
		r.Method(rt.method, "/api/v1/"+rt.name, s.serve(rt))
	}
	s.mountAdmin(r)
	r.Get("/api/v1/openapi.json", handleOpenAPI)
	r.Get("/healthz", s.handleHealth)
	if s.deps.Metrics != nil {
		r.Get("/metrics", s.handleMetrics)
	}
	if s.deps.ServiceWorker != nil {
		r.Method(http.MethodGet, "/sw.js", s.deps.ServiceWorker)
		r.Method(http.MethodHead, "/sw.js", s.deps.ServiceWorker)
	}
	r.NotFound(s.fallback)
	r.MethodNotAllowed(s.fallback)
	return r
}

// serve adapts a route: authorization first, then the handler, errors to the
// envelope.
func (s *Server) serve(rt route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		provenUser, err := s.authorize(rt.auth, r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if provenUser != "" {
			if err := s.chargeUser(w, r, provenUser); err != nil {
				s.writeError(w, r, err)
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), chargedUserKey{}, provenUser))
		}
		if s.requiresCredential(rt.auth) {
			extendBodyDeadline(r)
		}
		if err := rt.handle(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}
}

// fallback serves what chi did not match: API routes reached through another
// base URL or with trailing slashes, then the PWA's files, then a JSON 404.
func (s *Server) fallback(w http.ResponseWriter, r *http.Request) {
	if rt, ok := s.suffixRoute(r); ok {
		s.serve(rt)(w, r)
		return
	}
	if s.deps.Web != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead) && !strings.HasPrefix(r.URL.Path, "/api/") {
		s.deps.Web.ServeHTTP(w, r)
		return
	}
	s.writeError(w, r, errNotFound)
}

// suffixRoute is the API route r reaches through another base URL or with
// trailing slashes, as the standard's single-user server matches them.
func (s *Server) suffixRoute(r *http.Request) (route, bool) {
	path := strings.TrimRight(r.URL.Path, "/")
	for _, rt := range s.routes {
		if rt.method == r.Method && (path == "/"+rt.name || strings.HasSuffix(path, "/"+rt.name)) {
			return rt, true
		}
	}
	return route{}, false
}

// recoverPanics turns a panic into a logged INTERNAL_ERROR response, so a bug
// in one handler never takes the process down or leaves a client without an
// answer.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			switch v {
			case nil:
				return
			case http.ErrAbortHandler:
				panic(v)
			}
			s.log.ErrorContext(r.Context(), "handler panicked", "method", r.Method, "path", r.URL.Path,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			s.writeError(w, r, errInternal)
		}()
		next.ServeHTTP(w, r)
	})
}
