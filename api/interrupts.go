package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"time"

	"amsg/loop"
	"amsg/push"
	"amsg/push/courier"
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
	if s.deps.Instant == nil {
		return feature{}
	}
	s.resumes = &resumeRunner{}
	return feature{
		capabilities: []string{"interrupt-approvals"},
		routes: []route{
			{http.MethodPost, "interrupts/{interruptId}/decision", authDecisionToken, s.handleDecision},
			{http.MethodGet, "interrupts", authClient, s.handleInterrupts},
		},
	}
}

// resumeRunner tracks the rounds resumed in the background, so a shutdown
// (and a test) can wait for them.
type resumeRunner struct{ wg sync.WaitGroup }

// Bounds of the interrupt routes.
const (
	maxDecisionBodyBytes = 8 << 10
	maxPendingListed     = 100
	// resumeTimeout bounds a round resumed without a request.
	resumeTimeout = 10 * time.Minute
	// expireBatch bounds the interrupts one sweep settles.
	expireBatch = 100
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
	s.settled(r.Context(), in, decision.DeviceID)
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

// settled follows an interrupt that a decision or the expiry settled: the
// outcome's quiet push replaces the approval's notification on the user's
// devices (but the one that decided), and the loop resumes on the server
// once its round has every result. Both run in the background: the
// decision's answer does not wait for the model.
func (s *Server) settled(ctx context.Context, in *store.Interrupt, decidedBy int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resumeTimeout)
	s.resumes.wg.Go(func() {
		defer cancel()
		s.replaceApproval(ctx, in, decidedBy)
		s.resumeInterrupt(ctx, in)
	})
}

func (s *Server) replaceApproval(ctx context.Context, in *store.Interrupt, decidedBy int64) {
	p, err := s.deps.Instant.Agent.OutcomePush(in)
	if err == nil {
		var round *courier.Round
		if round, err = s.deps.Courier.Open(ctx, courier.Recipients{UserID: in.UserID, Except: decidedBy}, push.SourceInstant); err == nil {
			_, err = round.Push(ctx, p)
		}
	}
	if err != nil && !errors.Is(err, courier.ErrNoRecipients) {
		s.log.WarnContext(ctx, "could not replace an approval's notification", "interrupt", in.ID, "err", err)
	}
}

// resumeInterrupt runs the loop's next round, its pushes going to the
// user's devices as a JSON-transport round's do.
func (s *Server) resumeInterrupt(ctx context.Context, in *store.Interrupt) {
	run, err := s.deps.Instant.Agent.ResumeInterrupt(ctx, in)
	if err != nil || run == nil {
		if err != nil {
			s.log.ErrorContext(ctx, "could not resume a loop after an approval", "interrupt", in.ID, "err", err)
		}
		return
	}
	round, err := s.deps.Courier.Open(ctx, courier.Recipients{UserID: in.UserID}, push.SourceInstant)
	if err != nil {
		s.log.ErrorContext(ctx, "could not resume a loop after an approval", "interrupt", in.ID, "err", err)
		return
	}
	_, err = run.Execute(ctx, s.pushBudget(func(p push.Push) error { return s.deliverPush(ctx, round, p, false) }))
	var f *loop.Failure
	if errors.As(err, &f) && f.Push != nil {
		if derr := s.deliverPush(ctx, round, f.Push, false); derr != nil {
			s.log.WarnContext(ctx, "could not deliver an error push", "sessionId", in.SessionID, "code", f.Code, "err", derr)
		}
	}
}

// ExpireInterrupts settles the approvals whose time ran out, as of the
// agent's clock: each notification is replaced by "No longer waiting" and
// each loop resumes with {"approved": false, "expired": true}. It returns
// how many it settled. Instances on one database share the work: each
// interrupt is settled by exactly one.
func (s *Server) ExpireInterrupts(ctx context.Context) (int, error) {
	if s.resumes == nil {
		return 0, nil
	}
	// A read first: the sweep itself is a write, which on SQLite would take
	// the one writer every tick for nothing.
	next, err := s.deps.Instant.Agent.NextInterruptExpiry(ctx)
	if err != nil || next.IsZero() || next.After(s.deps.Instant.Agent.Now()) {
		return 0, err
	}
	n := 0
	for {
		list, err := s.deps.Instant.Agent.ExpireInterrupts(ctx, expireBatch)
		if err != nil {
			return n, err
		}
		for i := range list {
			s.settled(ctx, &list[i], 0)
		}
		n += len(list)
		if len(list) < expireBatch {
			return n, nil
		}
	}
}

// WatchInterrupts runs ExpireInterrupts every interval until ctx ends,
// then waits for the rounds it resumed. The interrupts live in the
// database, so an expiry that fell while no instance ran is settled by
// the first sweep after a start.
func (s *Server) WatchInterrupts(ctx context.Context, interval time.Duration) {
	if s.resumes == nil {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := s.ExpireInterrupts(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "could not settle expired approvals", "err", err)
		}
		select {
		case <-ctx.Done():
			s.WaitResumes()
			return
		case <-t.C:
		}
	}
}

// WaitResumes waits for the rounds resumed in the background.
func (s *Server) WaitResumes() {
	if s.resumes != nil {
		s.resumes.wg.Wait()
	}
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
