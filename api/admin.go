package api

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"amsg/builders"
	"amsg/push"
	"amsg/push/courier"
	"amsg/push/errcode"
	"amsg/scheduler"
	"amsg/store"

	"github.com/go-chi/chi/v5"
)

// The operator API: plain JSON under /api/v1/admin/, behind
// AMSG_ADMIN_TOKEN sent as a Bearer token. Without a configured token the
// routes do not exist (404). It sends to a user or broadcasts to many,
// lists users, their devices, tasks and failed deliveries, charts
// deliveries per minute, and deletes a user with everything stored for
// them.

// adminRoute is one operator endpoint; the router and the OpenAPI test
// both read adminRoutes.
type adminRoute struct {
	method, pattern string
	handle          handlerFunc
}

func (s *Server) adminRoutes() []adminRoute {
	return append([]adminRoute{
		{http.MethodPost, "/api/v1/admin/send", s.idempotent(adminScope, s.handleAdminSend)},
		{http.MethodPost, "/api/v1/admin/broadcasts", s.idempotent(adminScope, s.handleAdminBroadcast)},
		{http.MethodGet, "/api/v1/admin/broadcasts", s.handleAdminBroadcasts},
		{http.MethodGet, "/api/v1/admin/broadcasts/{broadcastId}", s.handleAdminBroadcastGet},
		{http.MethodPost, "/api/v1/admin/broadcasts/{broadcastId}/resume", s.handleAdminBroadcastResume},
		{http.MethodGet, "/api/v1/admin/users", s.handleAdminUsers},
		{http.MethodGet, "/api/v1/admin/users/{userId}/devices", s.handleAdminDevices},
		{http.MethodDelete, "/api/v1/admin/users/{userId}", s.handleAdminDeleteUser},
		{http.MethodGet, "/api/v1/admin/tasks", s.handleAdminTasks},
		{http.MethodGet, "/api/v1/admin/deliveries/failed", s.handleAdminFailed},
		{http.MethodGet, "/api/v1/admin/deliveries/per-minute", s.handleAdminPerMinute},
		{http.MethodGet, "/api/v1/admin/messages/per-day", s.handleAdminMessagesPerDay},
		{http.MethodGet, "/api/v1/admin/messages/{messageId}/timeline", s.handleAdminMessageTimeline},
	}, s.webhookRoutes()...)
}

// mountAdmin registers the operator routes and page when an operator token
// is set.
func (s *Server) mountAdmin(r chi.Router) {
	if s.cfg.AdminToken == "" {
		return
	}
	for _, rt := range s.adminRoutes() {
		r.Method(rt.method, rt.pattern, s.serveAdmin(rt.handle))
	}
	if s.deps.AdminPage != nil {
		for _, pattern := range []string{"/admin", "/admin/*"} {
			r.Method(http.MethodGet, pattern, s.deps.AdminPage)
			r.Method(http.MethodHead, pattern, s.deps.AdminPage)
		}
	}
}

var errAdminToken = fail(errcode.InvalidAdminToken)

func (s *Server) serveAdmin(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !s.tokens.equal(strings.TrimSpace(token), s.cfg.AdminToken) {
			s.writeError(w, r, errAdminToken)
			return
		}
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}
}

// adminMessage is what the operator sends: POST /admin/send's body and a
// broadcast's message.
type adminMessage struct {
	Message        string          `json:"message"`
	Title          string          `json:"title,omitempty"`
	ContactName    string          `json:"contactName,omitempty"`
	MessageSubtype string          `json:"messageSubtype,omitempty"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	// Priority "critical" passes the user's quiet hours and daily limit.
	Priority string `json:"priority,omitempty"`
}

// Bounds of operator input.
const (
	maxAdminMessageBytes = 3000 // a content push's text; longer goes out as _multipart anyway, but an operator note is short
	maxBroadcastUsers    = 100_000
	maxAdminUserIDLen    = 255
	maxBroadcastRate     = 200
)

// check validates the message, in order.
func (m adminMessage) check() error {
	switch {
	case strings.TrimSpace(m.Message) == "":
		return invalidFields(errcode.AdminMessageBlank, "message")
	case len(m.Message) > maxAdminMessageBytes:
		return invalidFields(errcode.AdminMessageLong.With(maxAdminMessageBytes), "message")
	case len(m.Title) > 200:
		return invalidFields(errcode.AdminTitleLong, "title")
	case len(m.ContactName) > 200:
		return invalidFields(errcode.AdminContactNameLong, "contactName")
	case len(m.MessageSubtype) > 64:
		return invalidFields(errcode.AdminSubtypeLong, "messageSubtype")
	case m.Metadata != nil && !isJSONObjectOrNull(m.Metadata):
		return invalidFields(errcode.AdminMetadataNotObject, "metadata")
	case m.Priority != "" && m.Priority != scheduler.PriorityNormal && m.Priority != scheduler.PriorityCritical:
		return errInvalidPriority
	}
	return nil
}

func isJSONObjectOrNull(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	_, ok := v.(map[string]any)
	return ok || v == nil
}

// decodeAdmin reads a bounded JSON body into v, refusing unknown fields so
// a typo is an error rather than silently ignored.
func (s *Server) decodeAdmin(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	return decodeAdminBody(body, v)
}

// decodeAdminBody decodes an operator request's body into v, refusing
// members v does not have.
func decodeAdminBody(body []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fail(errcode.AdminBodyShape.With(err.Error()))
	}
	return nil
}

// adminSendRequest is POST /admin/send's body.
type adminSendRequest struct {
	UserID string `json:"userId"`
	adminMessage
}

// deviceOutcome is how one device fared with one push: its last attempt.
type deviceOutcome struct {
	DeviceID int64        `json:"deviceId"`
	PushHost string       `json:"pushHost"`
	Outcome  push.Outcome `json:"outcome"`
	Status   int          `json:"status"`
	Tries    int          `json:"tries"`
	Error    string       `json:"error,omitempty"`
}

type adminSendResult struct {
	MessageID string          `json:"messageId"`
	Delivered bool            `json:"delivered"`
	Devices   []deviceOutcome `json:"devices"`
	// Set when the user's guards held the message (preferences_admin.go):
	// deferred to the end of quiet hours as the task TaskUUID, or recorded
	// in the outbox only past the daily limit.
	DeferredUntil string `json:"deferredUntil,omitempty"`
	TaskUUID      string `json:"taskUuid,omitempty"`
	OutboxOnly    bool   `json:"outboxOnly,omitempty"`
}

func (s *Server) handleAdminSend(w http.ResponseWriter, r *http.Request) error {
	var req adminSendRequest
	if err := s.decodeAdmin(w, r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.UserID) == "" || len(req.UserID) > maxAdminUserIDLen {
		return invalidFields(errcode.AdminUserIDInvalid.With(maxAdminUserIDLen), "userId")
	}
	if err := req.check(); err != nil {
		return err
	}
	res, err := s.adminSend(r.Context(), req.UserID, req.adminMessage)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, res)
	return nil
}

// adminSend builds one content push and sends it to every device of userID
// through adminDeliver, answering each device's outcome from the round's
// result. A user without devices is PUSH_SUBSCRIPTION_MISSING.
func (s *Server) adminSend(ctx context.Context, userID string, m adminMessage) (adminSendResult, error) {
	return s.adminSendAs(ctx, userID, m, adminPushIDs{})
}

// adminSendAs is adminSend with the push's ids given: a broadcast derives
// them from itself and the user (broadcastPushIDs).
func (s *Server) adminSendAs(ctx context.Context, userID string, m adminMessage, ids adminPushIDs) (adminSendResult, error) {
	p, err := s.buildAdminPush(m, ids)
	if err != nil {
		return adminSendResult{}, err
	}
	res := adminSendResult{MessageID: p.MessageID, Devices: []deviceOutcome{}}
	devices, err := s.deps.Store.CountDevices(ctx, userID)
	if err != nil {
		return res, err
	}
	if devices == 0 {
		return res, errSubscriptionMissing
	}
	if guarded, handled, err := s.guardAdminMessage(ctx, userID, m, p); handled || err != nil {
		return guarded, err
	}
	sent, derr := s.adminDeliver(ctx, userID, p)
	res.Delivered = derr == nil
	res.Devices = deviceOutcomes(sent)
	return res, nil
}

// deviceOutcomes is each device's last attempt, with its number of tries,
// from the round's result: what the delivery log recorded of it.
func deviceOutcomes(sent courier.Result) []deviceOutcome {
	out := []deviceOutcome{}
	for _, d := range sent.Devices {
		if len(d.Attempts) == 0 {
			continue
		}
		last := d.Attempts[len(d.Attempts)-1]
		out = append(out, deviceOutcome{DeviceID: d.DeviceID, PushHost: last.PushHost, Outcome: last.Outcome,
			Status: last.Status, Tries: len(d.Attempts), Error: last.Error})
	}
	return out
}

// adminPushIDs are the message and session ids of an operator's push;
// empty ones are drawn afresh.
type adminPushIDs struct{ messageID, sessionID string }

// broadcastPushIDs derives the ids of a broadcast's push to one user from
// the broadcast and the user, so a broadcast resumed after a crash sends
// that user the same message id again, which the service worker drops,
// never a second one (issue 22).
func broadcastPushIDs(broadcastID, userID string) adminPushIDs {
	derive := func(label string) string {
		sum := sha256.Sum256([]byte(label + "\x00" + broadcastID + "\x00" + userID))
		return hex.EncodeToString(sum[:16])
	}
	return adminPushIDs{messageID: "msg_" + derive("message"), sessionID: "sess_admin_" + derive("session")}
}

// SendBroadcast sends broadcast b's message to one user, as the operator's
// send with the ids derived from b and the user: scheduler.Broadcasts calls
// it for each recipient.
func (s *Server) SendBroadcast(ctx context.Context, b store.Broadcast, userID string) error {
	var m adminMessage
	if err := json.Unmarshal(b.Message, &m); err != nil {
		return err
	}
	_, err := s.adminSendAs(ctx, userID, m, broadcastPushIDs(b.ID, userID))
	if errors.Is(err, errSubscriptionMissing) {
		return scheduler.ErrNoDevices
	}
	return err
}

// buildAdminPush is the operator's message as a content push of its own
// session.
func (s *Server) buildAdminPush(m adminMessage, ids adminPushIDs) (*push.ContentPush, error) {
	p, _, err := s.builder.BuildContentPush(builders.ContentArgs{
		Common: builders.Common{MessageType: push.TypeInstant, Source: push.SourceInstant, MessageID: ids.messageID,
			SessionID: cmp.Or(ids.sessionID, "sess_admin_"+push.NewUUID()), MessageSubtype: m.MessageSubtype, Metadata: m.Metadata},
		Message: m.Message, Title: m.Title, ContactName: m.ContactName,
	})
	if err != nil {
		return nil, invalidFields(errcode.InvalidParameters.Quoting(err.Error()), "message") // the builder's reason
	}
	return p, nil
}

// adminDeliver is the operator's one way into delivery: a courier round of
// one push (outbox, fan-out, delivery log).
func (s *Server) adminDeliver(ctx context.Context, userID string, p push.Push) (courier.Result, error) {
	res, err := s.deps.Courier.SendPush(ctx, userID, push.SourceInstant, p)
	switch {
	case errors.Is(err, courier.ErrNoRecipients):
		return res, errSubscriptionMissing
	case err != nil:
		return res, &courier.UndeliveredError{Err: err}
	case res.Delivered() == 0:
		return res, res.Undelivered()
	}
	return res, nil
}

// adminBroadcastRequest is POST /admin/broadcasts's body: userIds, or all.
type adminBroadcastRequest struct {
	UserIDs []string `json:"userIds"`
	All     bool     `json:"all"`
	// RatePerSecond paces the sends, users per second.
	RatePerSecond int `json:"ratePerSecond"`
	adminMessage
}

type broadcastJSON struct {
	ID        string   `json:"broadcastId"`
	Status    string   `json:"status"`
	All       bool     `json:"all"`
	Users     int      `json:"users,omitempty"`
	Cursor    string   `json:"cursor"`
	Sent      int      `json:"sent"`
	Failed    int      `json:"failed"`
	Rate      int      `json:"ratePerSecond"`
	CreatedAt string   `json:"createdAt"`
	UpdatedAt string   `json:"updatedAt"`
	Message   any      `json:"message"`
	UserIDs   []string `json:"-"`
}

func toBroadcastJSON(b store.Broadcast) broadcastJSON {
	return broadcastJSON{ID: b.ID, Status: string(b.Status), All: b.UserIDs == nil, Users: len(b.UserIDs), Cursor: b.Cursor,
		Sent: b.Sent, Failed: b.Failed, Rate: b.RatePerSecond, CreatedAt: push.FormatTimestamp(b.CreatedAt), UpdatedAt: push.FormatTimestamp(b.UpdatedAt),
		Message: b.Message}
}

func (s *Server) handleAdminBroadcast(w http.ResponseWriter, r *http.Request) error {
	var req adminBroadcastRequest
	if err := s.decodeAdmin(w, r, &req); err != nil {
		return err
	}
	switch {
	case req.All == (len(req.UserIDs) > 0):
		return invalidFields(errcode.AdminRecipients, "userIds", "all")
	case len(req.UserIDs) > maxBroadcastUsers:
		return invalidFields(errcode.AdminTooManyUsers.With(maxBroadcastUsers), "userIds")
	case slices.ContainsFunc(req.UserIDs, func(id string) bool { return strings.TrimSpace(id) == "" || len(id) > maxAdminUserIDLen }):
		return invalidFields(errcode.AdminUserIDsInvalid.With(maxAdminUserIDLen), "userIds")
	case req.RatePerSecond < 0 || req.RatePerSecond > maxBroadcastRate:
		return invalidFields(errcode.AdminRate.With(maxBroadcastRate), "ratePerSecond")
	}
	if err := req.check(); err != nil {
		return err
	}
	if _, err := s.buildAdminPush(req.adminMessage, adminPushIDs{}); err != nil {
		return err // refused once here rather than for every user
	}
	message, err := json.Marshal(req.adminMessage)
	if err != nil {
		return err
	}
	b := store.Broadcast{ID: "bc_" + push.NewUUID(), Message: message, RatePerSecond: cmp.Or(req.RatePerSecond, scheduler.DefaultBroadcastRate)}
	if !req.All {
		b.UserIDs = dedupe(req.UserIDs)
	}
	if err := s.deps.Store.CreateBroadcast(r.Context(), b); err != nil {
		return err
	}
	created, err := s.deps.Store.GetBroadcast(r.Context(), b.ID)
	if err != nil {
		return err
	}
	s.deps.Broadcasts.Send(created)
	writeData(w, http.StatusAccepted, toBroadcastJSON(created))
	return nil
}

func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func (s *Server) handleAdminBroadcasts(w http.ResponseWriter, r *http.Request) error {
	list, err := s.deps.Store.Broadcasts(r.Context(), store.BroadcastStatus(r.URL.Query().Get("status")), 100)
	if err != nil {
		return err
	}
	out := make([]broadcastJSON, 0, len(list))
	for _, b := range list {
		out = append(out, toBroadcastJSON(b))
	}
	writeData(w, http.StatusOK, map[string]any{"broadcasts": out})
	return nil
}

func (s *Server) broadcastOf(r *http.Request) (store.Broadcast, error) {
	b, err := s.deps.Store.GetBroadcast(r.Context(), chi.URLParam(r, "broadcastId"))
	if errors.Is(err, store.ErrBroadcastNotFound) {
		return b, fail(errcode.BroadcastNotFound)
	}
	return b, err
}

func (s *Server) handleAdminBroadcastGet(w http.ResponseWriter, r *http.Request) error {
	b, err := s.broadcastOf(r)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toBroadcastJSON(b))
	return nil
}

// handleAdminBroadcastResume continues a stopped broadcast after its
// cursor; a running or finished one is answered as it stands.
func (s *Server) handleAdminBroadcastResume(w http.ResponseWriter, r *http.Request) error {
	b, err := s.broadcastOf(r)
	if err != nil {
		return err
	}
	if b.Status == store.BroadcastStopped {
		s.deps.Broadcasts.Send(b)
		b.Status = store.BroadcastRunning
	}
	writeData(w, http.StatusOK, toBroadcastJSON(b))
	return nil
}

// pageLimit reads ?limit= (default 100, at most store.MaxAdminPage).
func pageLimit(r *http.Request) (int, error) {
	raw := r.URL.Query().Get("limit")
	if raw == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > store.MaxAdminPage {
		return 0, invalidFields(errcode.AdminPageLimit.With(store.MaxAdminPage), "limit")
	}
	return n, nil
}

type userJSON struct {
	UserID       string  `json:"userId"`
	Devices      int     `json:"devices"`
	PendingTasks int     `json:"pendingTasks"`
	LastSeen     *string `json:"lastSeen"`
}

func optionalTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := push.FormatTimestamp(t)
	return &s
}

func (s *Server) handleAdminUsers(w http.ResponseWriter, r *http.Request) error {
	limit, err := pageLimit(r)
	if err != nil {
		return err
	}
	users, err := s.deps.Store.Users(r.Context(), r.URL.Query().Get("after"), limit)
	if err != nil {
		return err
	}
	out := make([]userJSON, 0, len(users))
	for _, u := range users {
		out = append(out, userJSON{u.UserID, u.Devices, u.PendingTasks, optionalTime(u.LastSeen)})
	}
	next := ""
	if len(users) == limit {
		next = users[len(users)-1].UserID
	}
	writeData(w, http.StatusOK, map[string]any{"users": out, "next": next})
	return nil
}

type deviceJSON struct {
	DeviceID   int64  `json:"deviceId"`
	PushHost   string `json:"pushHost"`
	CreatedAt  string `json:"createdAt"`
	LastSeenAt string `json:"lastSeenAt"`
}

// handleAdminDevices lists a user's devices by push service host; the
// endpoint itself is a bearer capability and never leaves the server.
// lastSeenAt is the device's last sign of life: its last registration, or a
// later report (POST /device-seen).
func (s *Server) handleAdminDevices(w http.ResponseWriter, r *http.Request) error {
	devices, err := s.deps.Store.DevicesSeen(r.Context(), chi.URLParam(r, "userId"))
	if err != nil {
		return err
	}
	out := make([]deviceJSON, 0, len(devices))
	for _, d := range devices {
		out = append(out, deviceJSON{d.ID, endpointHost(d.Endpoint), push.FormatTimestamp(d.CreatedAt), push.FormatTimestamp(d.LastSeenAt)})
	}
	writeData(w, http.StatusOK, map[string]any{"devices": out})
	return nil
}

// endpointHost is the push service's host, the only part of an endpoint
// fit to show.
func endpointHost(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return u.Host
}

func (s *Server) handleAdminDeleteUser(w http.ResponseWriter, r *http.Request) error {
	userID := chi.URLParam(r, "userId")
	d, err := s.deps.Store.DeleteUser(r.Context(), userID)
	if err != nil {
		return err
	}
	s.deps.Courier.Forget(userID)
	if d.Total() == 0 {
		return fail(errcode.UserNotFound)
	}
	s.log.InfoContext(r.Context(), "operator deleted a user", "rows", d.Total())
	writeData(w, http.StatusOK, map[string]any{"deleted": d})
	return nil
}

type adminTaskJSON struct {
	ID          int64           `json:"id"`
	UUID        string          `json:"uuid"`
	UserID      string          `json:"userId"`
	MessageType string          `json:"messageType"`
	Status      string          `json:"status"`
	NextSendAt  string          `json:"nextSendAt"`
	RetryCount  int             `json:"retryCount"`
	LastError   json.RawMessage `json:"lastError"`
	ContactName string          `json:"contactName"`
}

func (s *Server) handleAdminTasks(w http.ResponseWriter, r *http.Request) error {
	limit, err := pageLimit(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	status := store.TaskStatus(q.Get("status"))
	if !slices.Contains([]store.TaskStatus{"", store.TaskPending, store.TaskSent, store.TaskFailed}, status) {
		return invalidFields(errcode.AdminTaskStatus, "status")
	}
	var after int64
	if raw := q.Get("after"); raw != "" {
		if after, err = strconv.ParseInt(raw, 10, 64); err != nil || after < 0 {
			return invalidFields(errcode.AdminAfter, "after")
		}
	}
	tasks, err := s.deps.Store.AllTasks(r.Context(), status, after, limit)
	if err != nil {
		return err
	}
	out := make([]adminTaskJSON, 0, len(tasks))
	for _, t := range tasks {
		var payload struct {
			ContactName string `json:"contactName"`
		}
		_ = json.Unmarshal(t.Payload, &payload) // a payload that does not open shows no name
		lastError := t.LastError
		if lastError == nil {
			lastError = json.RawMessage("null")
		}
		out = append(out, adminTaskJSON{t.ID, t.UUID, t.UserID, string(t.MessageType), string(t.Status),
			push.FormatTimestamp(t.NextSendAt), t.RetryCount, lastError, payload.ContactName})
	}
	next := int64(0)
	if len(tasks) == limit {
		next = tasks[len(tasks)-1].ID
	}
	writeData(w, http.StatusOK, map[string]any{"tasks": out, "next": next})
	return nil
}

// sinceParam reads ?hours= (default 24, at most a week) as a start time.
func (s *Server) sinceParam(r *http.Request) (time.Time, error) {
	hours := 24
	if raw := r.URL.Query().Get("hours"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > 168 {
			return time.Time{}, invalidFields(errcode.AdminHours, "hours")
		}
		hours = n
	}
	return s.now().Add(-time.Duration(hours) * time.Hour), nil
}

type attemptJSON struct {
	At        string `json:"at"`
	MessageID string `json:"messageId"`
	UserID    string `json:"userId"`
	DeviceID  int64  `json:"deviceId"`
	PushHost  string `json:"pushHost"`
	Try       int    `json:"try"`
	Status    int    `json:"status"`
	Outcome   string `json:"outcome"`
	LatencyMs int64  `json:"latencyMs"`
	Error     string `json:"error"`
}

func (s *Server) handleAdminFailed(w http.ResponseWriter, r *http.Request) error {
	since, err := s.sinceParam(r)
	if err != nil {
		return err
	}
	limit, err := pageLimit(r)
	if err != nil {
		return err
	}
	attempts, err := s.deps.Store.FailedAttempts(r.Context(), since, limit)
	if err != nil {
		return err
	}
	out := make([]attemptJSON, 0, len(attempts))
	for _, a := range attempts {
		out = append(out, attemptJSON{push.FormatTimestamp(a.At), a.MessageID, a.UserID, a.DeviceID, a.PushHost, a.Try,
			a.Status, string(a.Outcome), a.Latency.Milliseconds(), a.Error})
	}
	writeData(w, http.StatusOK, map[string]any{"attempts": out})
	return nil
}

type minuteJSON struct {
	Minute   string         `json:"minute"`
	Outcomes map[string]int `json:"outcomes"`
}

// handleAdminPerMinute counts delivery attempts per minute by outcome;
// minutes without attempts are left out.
func (s *Server) handleAdminPerMinute(w http.ResponseWriter, r *http.Request) error {
	since, err := s.sinceParam(r)
	if err != nil {
		return err
	}
	counts, err := s.deps.Store.AttemptsPerMinute(r.Context(), since)
	if err != nil {
		return err
	}
	out := []minuteJSON{}
	for _, c := range counts {
		minute := push.FormatTimestamp(c.Minute)
		if len(out) == 0 || out[len(out)-1].Minute != minute {
			out = append(out, minuteJSON{minute, map[string]int{}})
		}
		out[len(out)-1].Outcomes[string(c.Outcome)] = c.Count
	}
	writeData(w, http.StatusOK, map[string]any{"since": push.FormatTimestamp(since), "minutes": out})
	return nil
}
