package api

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"amsg/push"
	"amsg/push/errcode"
	"amsg/store"
)

// messageEventsFeature tells an app what became of its messages (issue
// 25): GET /messages/{messageId}/status is the user's own message's
// timeline, and POST /receipts is where amsg's service worker reports
// pushes shown, clicked and dismissed (receipts.go).
func (s *Server) messageEventsFeature() feature {
	return feature{
		capabilities: []string{"message-status", "receipts"},
		routes: []route{
			{http.MethodGet, "messages/{messageId}/status", authClient, s.handleMessageStatus},
			{http.MethodPost, "receipts", authDecisionToken, s.handleReceipts},
		},
	}
}

var errMessageNotFound = fail(errcode.MessageNotFound)

// messageStatusJSON is a message's timeline as the status routes answer it.
type messageStatusJSON struct {
	MessageID string `json:"messageId"`
	// Status is the type of the latest event.
	Status string      `json:"status"`
	Events []eventJSON `json:"events"`
}

// eventJSON is one event of a timeline.
type eventJSON struct {
	Seq      int64           `json:"seq"`
	At       string          `json:"at"`
	Type     string          `json:"type"`
	DeviceID string          `json:"deviceId,omitempty"`
	Detail   json.RawMessage `json:"detail,omitempty"`
}

// handleMessageStatus answers the timeline of one of the user's messages,
// encrypted like the other reads of the user's data. A message of another
// user is as unknown as one never sent: 404 either way.
func (s *Server) handleMessageStatus(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	status, err := s.messageStatus(r, userID)
	if err != nil {
		return err
	}
	return s.writeEncrypted(w, userID, status)
}

// messageStatus reads the timeline of userID's message the route names.
func (s *Server) messageStatus(r *http.Request, userID string) (messageStatusJSON, error) {
	id, err := url.PathUnescape(chi.URLParam(r, "messageId"))
	if err != nil || id == "" || len(id) > maxMessageIDBytes {
		return messageStatusJSON{}, errMessageNotFound
	}
	events, err := s.deps.Store.MessageTimeline(r.Context(), userID, id)
	if err != nil {
		return messageStatusJSON{}, err
	}
	if len(events) == 0 {
		return messageStatusJSON{}, errMessageNotFound
	}
	return toMessageStatus(id, events), nil
}

// maxMessageIDBytes bounds a message id a route names, as the outbox does.
const maxMessageIDBytes = 1024

func toMessageStatus(id string, events []store.MessageEvent) messageStatusJSON {
	out := messageStatusJSON{MessageID: id, Events: make([]eventJSON, len(events))}
	for i, e := range events {
		out.Events[i] = eventJSON{Seq: e.Seq, At: push.FormatTimestamp(e.At), Type: e.Type, DeviceID: e.DeviceID, Detail: e.Detail}
	}
	out.Status = events[len(events)-1].Type
	return out
}
