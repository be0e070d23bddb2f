package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"amsg/builders"
	"amsg/push"
	"amsg/push/courier"
	"amsg/push/errcode"
	"amsg/push/webpush"
	"amsg/store"
)

// subscriptionFeature is the user-level push subscription of the standard,
// extended to several devices per user: PUT registers (or refreshes) this
// browser, GET reports the devices, DELETE removes one or all. POST
// /test-push is amsg's own: it sends a notification to every device, so a
// user can see the whole path work.
func (s *Server) subscriptionFeature() feature {
	return feature{
		capabilities: []string{"user-push-subscription", "multi-device-push-subscription", "test-push"},
		routes: []route{
			{http.MethodPut, "push-subscription", authClient, s.handlePutSubscription},
			{http.MethodGet, "push-subscription", authClient, s.handleGetSubscription},
			{http.MethodDelete, "push-subscription", authClient, s.handleDeleteSubscription},
			{http.MethodPost, "test-push", authClient, s.handleTestPush},
		},
	}
}

var (
	errInvalidSubscription = fail(errcode.InvalidSubscription)
	errInvalidUpdatedAt    = fail(errcode.InvalidUpdatedAt)
)

// handlePutSubscription stores the browser's PushSubscription as one of the
// user's devices, with the language it reports (deviceLanguage). Stricter than upstream, which stores any object with an
// endpoint: the endpoint must be https on a public host and the keys must be
// usable, so a subscription that can never receive a push is refused now
// rather than failing every send later.
func (s *Server) handlePutSubscription(w http.ResponseWriter, r *http.Request) error {
	userID, payload, err := s.decryptRequest(w, r)
	if err != nil {
		return err
	}
	var body struct {
		Subscription json.RawMessage `json:"subscription"`
		Language     json.RawMessage `json:"language"` // BCP 47; else Accept-Language's
	}
	if err := json.Unmarshal(payload, &body); err != nil {
		return errInvalidSubscription
	}
	sub, ok := subscriptionShape(body.Subscription)
	if !ok {
		return errInvalidSubscription.withDetails(map[string]any{"reason": "subscription must be an object with a string endpoint"})
	}
	var updatedAt time.Time
	if v := decodeObject(payload)["updatedAt"]; v != nil {
		ms, ok := positiveInteger(v)
		if !ok {
			return errInvalidUpdatedAt
		}
		updatedAt = time.UnixMilli(ms)
	}
	language, err := deviceLanguage(body.Language, r.Header.Get("Accept-Language"))
	if err != nil {
		return err
	}
	if err := s.checkSubscription(r.Context(), sub, ""); err != nil {
		return err
	}
	device, err := s.deps.Store.PutDevice(r.Context(), userID, body.Subscription, updatedAt, language)
	if errors.Is(err, store.ErrEndpointTaken) {
		return errEndpointTaken
	}
	if err != nil {
		return err
	}
	s.deps.Courier.Forget(userID)
	writeData(w, http.StatusOK, struct {
		UpdatedAt int64 `json:"updatedAt"`
		DeviceID  int64 `json:"deviceId"`
	}{device.UpdatedAt.UnixMilli(), device.ID})
	return nil
}

// handleGetSubscription reports the most recently updated device and how
// many there are; never the keys.
func (s *Server) handleGetSubscription(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	sum, err := s.deps.Store.SubscriptionSummary(r.Context(), userID)
	if err != nil {
		return err
	}
	var updatedAt *int64
	var endpoint *string
	if sum.Exists {
		ms := sum.UpdatedAt.UnixMilli()
		updatedAt, endpoint = &ms, &sum.Endpoint
	}
	writeData(w, http.StatusOK, struct {
		Exists    bool    `json:"exists"`
		UpdatedAt *int64  `json:"updatedAt"`
		Endpoint  *string `json:"endpoint"`
		Devices   int     `json:"devices"`
	}{sum.Exists, updatedAt, endpoint, sum.Devices})
	return nil
}

// handleDeleteSubscription removes the device with ?endpoint=, or all of the
// user's devices without it.
func (s *Server) handleDeleteSubscription(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	var count int
	if endpoint := r.URL.Query().Get("endpoint"); endpoint != "" {
		deleted, err := s.deps.Store.DeleteSubscription(r.Context(), userID, endpoint)
		if err != nil {
			return err
		}
		if deleted {
			count = 1
		}
	} else if count, err = s.deps.Store.DeleteSubscriptions(r.Context(), userID); err != nil {
		return err
	}
	s.deps.Courier.Forget(userID)
	writeData(w, http.StatusOK, struct {
		Deleted bool `json:"deleted"`
		Count   int  `json:"count"`
	}{count > 0, count})
	return nil
}

// handleTestPush sends one content push to every device of the user and
// reports what each push service answered.
func (s *Server) handleTestPush(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	p, _, err := s.builder.BuildContentPush(builders.ContentArgs{
		Common: builders.Common{
			MessageType:    push.TypeInstant,
			Source:         push.SourceInstant,
			SessionID:      "sess_" + push.NewUUID(),
			MessageSubtype: "test",
		},
		Message: "amsg can reach this device.",
		Title:   "amsg",
	})
	if err != nil {
		return err
	}
	res, err := s.deps.Courier.SendPush(r.Context(), userID, push.SourceInstant, p)
	if errors.Is(err, courier.ErrNoRecipients) {
		return errSubscriptionMissing
	}
	if err != nil {
		return err
	}
	type deviceResult struct {
		DeviceID int64        `json:"deviceId"`
		Outcome  push.Outcome `json:"outcome"`
		Status   int          `json:"status"`
	}
	devices := make([]deviceResult, len(res.Devices))
	for i, d := range res.Devices {
		devices[i] = deviceResult{d.DeviceID, d.Outcome, d.Status}
	}
	writeData(w, http.StatusOK, struct {
		MessageID string         `json:"messageId"`
		Delivered int            `json:"delivered"`
		Devices   []deviceResult `json:"devices"`
	}{p.MessageID, res.Delivered(), devices})
	return nil
}

// subscriptionShape is the standard's check of a subscription: an object
// with a non-blank string endpoint.
func subscriptionShape(raw json.RawMessage) (push.Subscription, bool) {
	var sub push.Subscription
	ok := push.JSONKind(raw) == '{' && json.Unmarshal(raw, &sub) == nil && strings.TrimSpace(sub.Endpoint) != ""
	return sub, ok
}

// checkSubscription is amsg's stricter check of a subscription that has the
// standard's shape: an https endpoint on a public host (unless private
// endpoints are allowed) and usable keys. A refusal is 400
// INVALID_PUSH_SUBSCRIPTION naming the field, prefixed with where the
// subscription sat in the request ("pushSubscription.").
func (s *Server) checkSubscription(ctx context.Context, sub push.Subscription, where string) error {
	err := s.endpoints.CheckSubscription(ctx, sub)
	var invalid *webpush.InvalidSubscriptionError
	if errors.As(err, &invalid) {
		return fail(errcode.SubscriptionRefused.With(invalid.Error(), invalid.Reason)).
			withDetails(map[string]any{"field": where + invalid.Field, "reason": invalid.Reason})
	}
	return err
}

// errSubscriptionMissing is the standard's answer when a user has no device
// to push to.
var errSubscriptionMissing = fail(errcode.SubscriptionMissing)
