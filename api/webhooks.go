package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"amsg/push"
	"amsg/push/errcode"
	"amsg/scheduler/webhook"
	"amsg/store"
)

// The operator's webhook endpoints (issue 25): POST /admin/webhooks
// registers a receiver for the event types it names and answers with its
// signing secret, the one time it is shown; GET lists them with how their
// deliveries fare (pending, given up, the last failure); DELETE removes one
// with its deliveries. scheduler/webhook sends.

// EnvWebhookID is the id of the endpoint AMSG_WEBHOOK_URL configures.
const EnvWebhookID = "env"

// webhooksFeature advertises signed webhooks; their routes are the
// operator's (webhookRoutes), mounted with the other admin routes.
func (s *Server) webhooksFeature() feature {
	return feature{capabilities: []string{"signed-webhooks"}}
}

func (s *Server) webhookRoutes() []adminRoute {
	return []adminRoute{
		{http.MethodPost, "/api/v1/admin/webhooks", s.handleAdminWebhookCreate},
		{http.MethodGet, "/api/v1/admin/webhooks", s.handleAdminWebhooks},
		{http.MethodDelete, "/api/v1/admin/webhooks/{webhookId}", s.handleAdminWebhookDelete},
	}
}

var (
	errInvalidWebhookURL   = fail(errcode.InvalidWebhookURL)
	errInvalidWebhookEvent = fail(errcode.InvalidWebhookEvent)
	errWebhookNotFound     = fail(errcode.WebhookNotFound)
	errWebhookLimit        = fail(errcode.WebhookLimitExceeded)
)

// webhookRequest is POST /admin/webhooks's body.
type webhookRequest struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
	// Batch lets one request carry several events as a JSON array.
	Batch bool `json:"batch"`
}

// decodeWebhookRequest reads and checks a webhookRequest, the URL's form
// included but not its host's addresses (checkWebhookHost).
func decodeWebhookRequest(body []byte) (webhookRequest, error) {
	var req webhookRequest
	if err := decodeAdminBody(body, &req); err != nil {
		return req, err
	}
	switch {
	case req.URL == "":
		return req, missingParameters("url")
	case req.Events == nil:
		return req, missingParameters("events")
	case len(req.Events) > len(webhook.EventTypes):
		return req, errInvalidWebhookEvent.withDetails(map[string]any{"reason": "more event types than there are", "known": webhook.EventTypes})
	}
	if err := webhook.CheckEventTypes(req.Events); err != nil {
		details := map[string]any{"reason": err.Error(), "known": webhook.EventTypes}
		if unknown, ok := errors.AsType[*webhook.UnknownEventError](err); ok {
			details["eventType"] = unknown.Type
		}
		return req, errInvalidWebhookEvent.withDetails(details)
	}
	return req, nil
}

// checkWebhookURL applies the outbound address policy to the receiver.
func (s *Server) checkWebhookURL(ctx context.Context, raw string) error {
	err := s.cfg.WebhookPolicy.Check(ctx, raw)
	if refused, ok := errors.AsType[*webhook.URLError](err); ok {
		return errInvalidWebhookURL.withDetails(map[string]any{"reason": refused.Reason})
	}
	return err
}

func (s *Server) handleAdminWebhookCreate(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	req, err := decodeWebhookRequest(body)
	if err != nil {
		return err
	}
	if err := s.checkWebhookURL(r.Context(), req.URL); err != nil {
		return err
	}
	e, err := s.deps.Store.PutWebhookEndpoint(r.Context(), store.WebhookEndpoint{
		ID: newWebhookID(), URL: req.URL, Events: req.Events, Secret: webhook.GenerateSecret(), Batch: req.Batch,
	})
	if errors.Is(err, store.ErrWebhookLimit) {
		return errWebhookLimit.withDetails(map[string]any{"limit": store.MaxWebhookEndpoints})
	}
	if err != nil {
		return err
	}
	out := toWebhookJSON(e, store.WebhookHealth{})
	out.Secret = e.Secret
	writeData(w, http.StatusCreated, out)
	return nil
}

func newWebhookID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "wh_" + hex.EncodeToString(b[:])
}

// webhookJSON is an endpoint as the operator API shows it. Secret is set
// only in the answer that created it.
type webhookJSON struct {
	ID          string              `json:"webhookId"`
	URL         string              `json:"url"`
	Events      []string            `json:"events"`
	Batch       bool                `json:"batch"`
	Source      string              `json:"source"` // "api", or "env" for AMSG_WEBHOOK_URL
	CreatedAt   string              `json:"createdAt"`
	Secret      string              `json:"secret,omitempty"`
	Pending     int                 `json:"pending"`
	Failed      int                 `json:"failed"`
	LastFailure *webhookFailureJSON `json:"lastFailure,omitempty"`
}

type webhookFailureJSON struct {
	Seq        string `json:"seq"`
	At         string `json:"at"`
	Attempts   int    `json:"attempts"`
	LastStatus int    `json:"lastStatus,omitempty"`
	LastError  string `json:"lastError"`
}

func toWebhookJSON(e store.WebhookEndpoint, h store.WebhookHealth) webhookJSON {
	out := webhookJSON{ID: e.ID, URL: e.URL, Events: e.Events, Batch: e.Batch, Source: "api",
		CreatedAt: push.FormatTimestamp(e.CreatedAt), Pending: h.Pending, Failed: h.Failed}
	if e.ID == EnvWebhookID {
		out.Source = "env"
	}
	if f := h.LastFailure; f != nil {
		out.LastFailure = &webhookFailureJSON{Seq: strconv.FormatInt(f.EventSeq, 10), At: push.FormatTimestamp(f.At),
			Attempts: f.Attempts, LastStatus: f.LastStatus, LastError: f.LastError}
	}
	return out
}

func (s *Server) handleAdminWebhooks(w http.ResponseWriter, r *http.Request) error {
	endpoints, err := s.deps.Store.WebhookEndpoints(r.Context())
	if err != nil {
		return err
	}
	health, err := s.deps.Store.WebhookHealth(r.Context())
	if err != nil {
		return err
	}
	out := make([]webhookJSON, 0, len(endpoints))
	for _, e := range endpoints {
		out = append(out, toWebhookJSON(e, health[e.ID]))
	}
	writeData(w, http.StatusOK, map[string]any{"webhooks": out})
	return nil
}

func (s *Server) handleAdminWebhookDelete(w http.ResponseWriter, r *http.Request) error {
	err := s.deps.Store.DeleteWebhookEndpoint(r.Context(), chi.URLParam(r, "webhookId"))
	if errors.Is(err, store.ErrWebhookNotFound) {
		return errWebhookNotFound
	}
	if err != nil {
		return err
	}
	return writeDeleted(w, 1)
}
