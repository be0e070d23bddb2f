package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"amsg/builders"
	"amsg/llm"
	"amsg/loop"
	"amsg/push"
	"amsg/push/courier"
	"amsg/push/errcode"
	"amsg/scheduler"
)

// Instant is what /instant, /continue and /sessions need beyond the
// shared dependencies.
type Instant struct {
	Agent *loop.Agent
	// Interrupts follows the approvals Agent's rounds ask for (the
	// outcome's push, the loop's next round, the expiry); nil serves no
	// approval routes.
	Interrupts *scheduler.Interrupts
	// KeepAlive is the interval of SSE keepalive comments; 0 means
	// DefaultKeepAlive.
	KeepAlive time.Duration
	// DefaultModel says the operator configured a model, which a request
	// that gives no apiUrl, apiKey and primaryModel uses.
	DefaultModel bool
}

// instantFeature is the standard's instant path with amsg's agent loop:
// POST /instant runs one LLM round and pushes what it produces, pausing on
// tool calls; POST /continue resumes with the tool results; GET
// /sessions/{sessionId} returns the session's transcript.
func (s *Server) instantFeature() feature {
	if s.deps.Instant == nil {
		return feature{}
	}
	routes := []route{
		{http.MethodPost, "instant", authInstant, s.handleInstant},
		{http.MethodPost, "continue", authInstant, s.handleContinue},
		{http.MethodGet, "sessions/{sessionId}", authClient, s.handleSession},
	}
	for _, name := range []string{"instant", "continue"} {
		for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			routes = append(routes, route{method, name, authInstant, onlyPost})
		}
	}
	capabilities := []string{"instant", "instant-sse", "instant-tools", "continue-tool-results", "session-transcripts", "llm-extra-body"}
	if s.deps.Instant.DefaultModel {
		// A request without apiUrl, apiKey and primaryModel uses the
		// operator's model (--llm-api-url): the page then chats with empty
		// model settings.
		capabilities = append(capabilities, "operator-model")
	}
	return feature{capabilities: capabilities, routes: routes}
}

// onlyPost answers the instant path's other methods as the standard does.
func onlyPost(http.ResponseWriter, *http.Request) error {
	return fail(errcode.MethodNotAllowed)
}

// instantCall is an /instant or /continue request read, validated and
// addressed.
type instantCall struct {
	req    *instantRequest
	userID string         // "" when the request names no user
	proven bool           // the body opened under userID's key, or a Bearer token minted for userID came with it
	round  *courier.Round // the round's recipients, resolved once
	owner  loop.Owner
}

type decodeFunc func(f fields, haveUser bool, maxIter int, defaultModel bool, warn func(builders.Warning)) (*instantRequest, error)

// readInstantCall runs the standard's request pipeline after auth: the
// user id when the request names one (required for an encrypted body),
// the body (gunzipped on X-Amsg-Request-Encoding: gzip, decrypted when
// X-Payload-Encrypted: true), validation, then amsg's checks of the
// recipients, which opens the call's courier round (the caller closes it).
func (s *Server) readInstantCall(w http.ResponseWriter, r *http.Request, decode decodeFunc) (*instantCall, error) {
	if err := requireJSONContent(r); err != nil {
		return nil, err
	}
	encrypted := strings.TrimSpace(r.Header.Get("X-Payload-Encrypted")) == "true"
	var userID string
	var err error
	switch {
	case encrypted:
		userID, err = requireEncryptionHeaders(r)
	case strings.TrimSpace(r.Header.Get("X-User-Id")) != "":
		userID, err = requireUserID(r)
	}
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Amsg-Request-Encoding")), "gzip") {
		r.Body = &gunzipBody{src: http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)}
	}
	var f fields
	if encrypted {
		payload, err := s.openBody(w, r, userID, s.cfg.MaxBodyBytes)
		if err != nil {
			return nil, err
		}
		f = decodeFields(payload)
	} else {
		body, err := readBody(w, r, s.cfg.MaxBodyBytes)
		if err != nil {
			return nil, err
		}
		if f, err = bodyFields(body); err != nil {
			return nil, err
		}
	}
	warn := func(w builders.Warning) {
		s.log.WarnContext(r.Context(), "avatarUrl 不合法，已置空", "path", r.URL.Path, "warning", w.String())
	}
	q, err := decode(f, userID != "", s.deps.Instant.Agent.MaxIterations(), s.deps.Instant.DefaultModel, warn)
	if err != nil {
		return nil, err
	}
	round, err := s.openRound(r.Context(), userID, q.subscription)
	if err == nil && !round.Reachable() && acceptsOnlyJSON(strings.Join(r.Header.Values("Accept"), ",")) {
		// Over SSE the reply reaches the page without Web Push: a user who
		// has not turned notifications on can still chat (the outbox keeps
		// the pushes for a device registered later). Only the JSON
		// transport needs a recipient.
		err = errSubscriptionMissing
	}
	if err != nil {
		return nil, err
	}
	if err := s.checkAPIURL(r.Context(), q.apiURL); err != nil {
		return nil, err
	}
	owner := loop.UserOwner(userID)
	if userID == "" {
		owner = loop.SubscriptionOwner(q.subscription.Endpoint)
	}
	proven := encrypted || userID != "" && chargedUser(r) == userID
	return &instantCall{req: q, userID: userID, proven: proven, round: round, owner: owner}, nil
}

func (s *Server) handleInstant(w http.ResponseWriter, r *http.Request) error {
	c, err := s.readInstantCall(w, r, decodeInstant)
	if err != nil {
		return err
	}
	sessionID := c.req.sessionID
	if sessionID == "" {
		sessionID = "sess_" + push.NewUUID()
	}
	rd, err := s.rounds.admit(w, r, s.roundOwner(r, c), s.callerAddress(r))
	if err != nil {
		return err
	}
	defer rd.end()
	ctx := rd.ctx
	run, err := s.deps.Instant.Agent.Start(ctx, loop.Start{
		Owner: c.owner, SessionID: sessionID, Iteration: max(c.req.iteration, 0), Call: c.req.call(),
		Presentation: c.req.presentation(r), TokenBudget: c.req.tokenBudget, Approvals: c.req.approvals,
	})
	if err != nil {
		return err
	}
	return s.respondRound(ctx, w, r, run, c.round)
}

// acceptsOnlyJSON is the standard's transport rule: a JSON envelope only
// when Accept is not empty and every media range in it, parameters
// dropped, is application/json; otherwise an event stream.
func acceptsOnlyJSON(accept string) bool {
	if strings.TrimSpace(accept) == "" {
		return false
	}
	for part := range strings.SplitSeq(accept, ",") {
		media, _, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(media), "application/json") {
			return false
		}
	}
	return true
}

// respondRound executes a prepared round over the transport the request
// asked for.
func (s *Server) respondRound(ctx context.Context, w http.ResponseWriter, r *http.Request, run *loop.Run, to *courier.Round) error {
	if acceptsOnlyJSON(strings.Join(r.Header.Values("Accept"), ",")) {
		return s.respondJSON(ctx, w, run, to)
	}
	s.respondSSE(ctx, w, r, run, to)
	return nil
}

// roundResult is the JSON envelope's data: the legacy path's fields and
// the loop's, together, so clients of either shape find theirs.
type roundResult struct {
	MessagesSent int         `json:"messagesSent"`
	SentAt       string      `json:"sentAt"`
	SessionID    string      `json:"sessionId"`
	Status       loop.Status `json:"status"`
	Iteration    int         `json:"iteration"`
}

// respondJSON delivers each push before the next, by Web Push only, and
// answers once all went out. A push that reaches no recipient ends the
// round with 502 PUSH_SEND_FAILED; a failed LLM call with 502
// LLM_CALL_FAILED, after its error push.
func (s *Server) respondJSON(ctx context.Context, w http.ResponseWriter, run *loop.Run, to *courier.Round) error {
	out, err := run.Execute(ctx, s.pushBudget(func(p push.Push) error { return to.Reach(ctx, p, false) }))
	var f *loop.Failure
	if errors.As(err, &f) {
		if f.Push != nil {
			if derr := to.Reach(ctx, f.Push, false); derr != nil {
				s.log.WarnContext(ctx, "could not deliver an error push", "sessionId", run.SessionID(), "code", f.Code, "err", derr)
			}
		}
		return roundError(f)
	}
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, roundResult{out.MessagesSent, push.FormatTimestamp(out.SentAt), out.SessionID, out.Status, out.Iteration})
	return nil
}

// roundError is the JSON transport's answer to a failed round, with the
// standard's statuses.
func roundError(f *loop.Failure) *Error {
	code, ok := errcode.Lookup(f.Code)
	if !ok {
		return errInternal
	}
	if code == errcode.LLMCallFailed {
		e := fail(code.Quoting(f.Message))
		var le *llm.Error
		if errors.As(f.Err, &le) {
			e.Cause = Cause{LLMStatus: le.Status, ProviderCode: le.ProviderCode}
		}
		return e
	}
	if errors.Is(f.Err, push.ErrPayloadTooLarge) {
		e := fail(errcode.PayloadTooLarge.Quoting(f.Message))
		e.Status = http.StatusInternalServerError // the standard's: no size of the push fits
		return e
	}
	details := map[string]any{"messageIndex": f.MessageIndex}
	e := fail(code.Quoting(f.Message))
	var de *courier.UndeliveredError
	if errors.As(f.Err, &de) && de.Status != 0 {
		details["statusCode"] = de.Status
		e.Cause.PushStatus = de.Status
	}
	return e.withDetails(details)
}

// respondSSE streams each push as an `event: payload` frame the moment the
// round produces it and sends the same bytes by Web Push (the backup, same
// messageId), in order, on a goroutine of its own so a slow push service
// never holds up the stream. Under the visible push policy the backup of a
// frame the stream delivered skips the streaming device (the request's
// pushSubscription), whose worker would otherwise get a push the page
// already showed; its other devices get it, and it gets those whose frame
// the stream could not deliver. A client that goes away stops only the frames.
// The stream ends with `event: done`, or `event: error` carrying the error
// push when the round failed, which also goes by Web Push under the same
// messageId, as the standard does: the user's other devices and a page whose
// connection was cut learn that the reply failed, and the service worker and
// the client drop the copy they already have. The stream closes once every
// backup has settled.
func (s *Server) respondSSE(ctx context.Context, w http.ResponseWriter, r *http.Request, run *loop.Run, to *courier.Round) {
	keepAlive := s.deps.Instant.KeepAlive
	if keepAlive <= 0 {
		keepAlive = DefaultKeepAlive
	}
	stream := startSSE(w, r, keepAlive)
	backups := to.Backups(ctx)
	_, err := run.Execute(ctx, s.pushBudget(func(p push.Push) error {
		data, err := push.Encode(p)
		if err != nil {
			return err
		}
		backups.Add(p, stream.event("payload", data))
		return nil
	}))
	var f *loop.Failure
	switch {
	case errors.As(err, &f) && f.Push != nil:
		data, eerr := push.Encode(f.Push)
		backups.Add(f.Push, eerr == nil && stream.event("error", data))
	case err != nil:
		s.log.ErrorContext(ctx, "instant round failed", "sessionId", run.SessionID(), "err", err)
	default:
		stream.event("done", []byte("{}"))
	}
	stream.close()
	backups.Wait()
}

// openRound checks a request's recipients and opens its courier round:
// every device of the user it names, and the push subscription it carries
// (unless that is one of the user's devices already). The request's
// subscription must be usable (https on a public host unless private
// endpoints are allowed, keys that encrypt). A round that reaches nobody
// still records the user's pushes in the outbox.
func (s *Server) openRound(ctx context.Context, userID string, sub *push.Subscription) (*courier.Round, error) {
	if sub != nil {
		if err := s.checkSubscription(ctx, *sub, "pushSubscription."); err != nil {
			return nil, err
		}
	}
	return s.deps.Courier.Open(ctx, courier.Recipients{UserID: userID, Subscription: sub}, push.SourceInstant)
}
