package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"amsg/loop"
	"amsg/push"
	"amsg/push/errcode"
	"amsg/push/notifytext"
	"amsg/store"

	"github.com/go-chi/chi/v5"
)

// interruptsFeature answers approvals (issue 21): POST
// /interrupts/{id}/decision settles an approval with its decision token, the
// only credential it needs (a service worker has no user key at hand), and
// resumes the loop on the server; GET /interrupts?status=pending lists the
// user's pending approvals for the page.
func (s *Server) interruptsFeature() feature {
	if s.deps.Instant == nil || s.deps.Instant.Interrupts == nil {
		return feature{}
	}
	return feature{
		capabilities: []string{"interrupt-approvals"},
		routes: []route{
			{http.MethodPost, "interrupts/{interruptId}/decision", authDecisionToken, s.handleDecision},
			{http.MethodGet, "interrupts", authClient, s.handleInterrupts},
		},
	}
}

// Bounds of the interrupt routes.
const (
	maxDecisionBodyBytes = 8 << 10
	maxPendingListed     = 100
)

var (
	errInterruptNotFound = fail(errcode.InterruptNotFound)
	errInterruptToken    = fail(errcode.InterruptTokenInvalid)
	errInterruptDecided  = fail(errcode.InterruptAlreadyDecided)
	errInterruptExpired  = fail(errcode.InterruptExpired)
	errInterruptStatus   = fail(errcode.InvalidInterruptStatus)
)

// decisionResult is POST /interrupts/{id}/decision's data.
type decisionResult struct {
	InterruptID string `json:"interruptId"`
	State       string `json:"state"`
	DecidedAt   string `json:"decidedAt"`
	// Notice is the text the deciding device shows.
	Notice string `json:"notice"`
}

func (s *Server) handleDecision(w http.ResponseWriter, r *http.Request) error {
	if err := requireJSONContent(r); err != nil {
		return err
	}
	id, err := url.PathUnescape(chi.URLParam(r, "interruptId"))
	if err != nil || id == "" {
		return errInterruptNotFound
	}
	body, err := readBody(w, r, maxDecisionBodyBytes)
	if err != nil {
		return err
	}
	d, err := decodeDecision(body)
	if err != nil {
		return err
	}
	agent := s.deps.Instant.Agent
	if err := agent.CheckDecisionToken(id, d.Token); err != nil {
		return s.decisionError(r.Context(), id, err)
	}
	decision := loop.Decision{InterruptID: id, Token: d.Token, Approve: d.Decision == "approve", Reason: d.Reason}
	if d.Endpoint != "" {
		decision.DeviceID = s.deviceOf(r.Context(), id, d.Endpoint)
	}
	in, err := agent.Decide(r.Context(), decision)
	if err != nil {
		return s.decisionError(r.Context(), id, err)
	}
	// The outcome's push and the loop's next round follow in the
	// background: the answer does not wait for the model.
	s.deps.Instant.Interrupts.Settled(r.Context(), in, decision.DeviceID)
	view, err := loop.ViewInterrupt(in)
	if err != nil {
		return err
	}
	notice := notifytext.Declined
	if in.State == store.InterruptApproved {
		notice = notifytext.Approved
	}
	writeData(w, http.StatusOK, decisionResult{InterruptID: in.ID, State: string(in.State),
		DecidedAt: push.FormatTimestamp(in.DecidedAt), Notice: notifytext.Text(view.Language, notice)})
	return nil
}

// decisionError maps why a decision changed nothing to its answer; a late
// one carries the notice the device shows instead of the outcome.
func (s *Server) decisionError(ctx context.Context, id string, err error) error {
	var e *Error
	var notice notifytext.Key
	switch {
	case errors.Is(err, loop.ErrDecisionToken):
		return errInterruptToken
	case errors.Is(err, store.ErrInterruptNotFound):
		return errInterruptNotFound
	case errors.Is(err, store.ErrInterruptExpired):
		e, notice = errInterruptExpired, notifytext.NoLongerWaiting
	case errors.Is(err, store.ErrInterruptDecided):
		e, notice = errInterruptDecided, notifytext.AlreadyAnswered
	default:
		return err
	}
	details := map[string]any{"interruptId": id}
	if in, rerr := s.deps.Store.Interrupt(ctx, id); rerr == nil {
		if view, verr := loop.ViewInterrupt(in); verr == nil {
			details["state"], details["notice"] = string(in.State), notifytext.Text(view.Language, notice)
		}
	}
	return e.withDetails(details)
}

// deviceOf is the id of the interrupt's user's device with endpoint, 0 when
// none: a device that names itself is left out of the outcome's push.
func (s *Server) deviceOf(ctx context.Context, interruptID, endpoint string) int64 {
	in, err := s.deps.Store.Interrupt(ctx, interruptID)
	if err != nil {
		return 0
	}
	devices, err := s.deps.Store.Devices(ctx, in.UserID)
	if err != nil {
		return 0
	}
	for _, d := range devices {
		if d.Subscription.Endpoint == endpoint {
			return d.ID
		}
	}
	return 0
}

// interruptJSON is a pending approval as GET /interrupts lists it.
type interruptJSON struct {
	ID            string          `json:"id"`
	Kind          string          `json:"kind"`
	SessionID     string          `json:"sessionId"`
	ToolCallID    string          `json:"toolCallId"`
	Tool          string          `json:"tool"`
	Arguments     json.RawMessage `json:"arguments"`
	ContactName   string          `json:"contactName,omitempty"`
	Tag           string          `json:"tag"`
	CreatedAt     string          `json:"createdAt"`
	ExpiresAt     string          `json:"expiresAt"`
	DecisionToken string          `json:"decisionToken"`
}

func (s *Server) handleInterrupts(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	if status := r.URL.Query().Get("status"); status != "" && status != "pending" {
		return errInterruptStatus.withDetails(map[string]any{"status": status})
	}
	list, err := s.deps.Store.PendingInterrupts(r.Context(), userID, s.deps.Instant.Agent.Now(), maxPendingListed)
	if err != nil {
		return err
	}
	out := make([]interruptJSON, 0, len(list))
	for i := range list {
		v, err := loop.ViewInterrupt(&list[i])
		if err != nil {
			return err
		}
		out = append(out, interruptJSON{ID: v.ID, Kind: "approval", SessionID: v.SessionID, ToolCallID: v.ToolCallID,
			Tool: v.Name, Arguments: v.Args, ContactName: v.ContactName, Tag: v.Tag,
			CreatedAt: push.FormatTimestamp(v.CreatedAt), ExpiresAt: push.FormatTimestamp(v.ExpiresAt),
			DecisionToken: s.deps.Instant.Agent.DecisionToken(v.ID)})
	}
	return s.writeEncrypted(w, userID, struct {
		Interrupts []interruptJSON `json:"interrupts"`
	}{out})
}
