package loop

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"amsg/builders"
	"amsg/llm"
	"amsg/push"
	"amsg/push/errcode"
	"amsg/push/notifytext"
	"amsg/store"
)

// Approvals (issue 21). A request may name tools whose calls need the
// person's decision rather than a run in the browser. When the model calls
// one, the round records an interrupt per such call (store.Interrupt) and
// pushes it as an approval: a tool_request push with Approve and Deny
// buttons and a decision token. The first valid decision (Decide) or the
// expiry (ExpireInterrupts) settles the interrupt, once, in a fenced store
// write; once every interrupt of the round is settled, ResumeInterrupt
// continues the loop on the server with the results {"approved": true},
// {"approved": false, "reason": …} or {"approved": false, "expired": true}.
// The other calls of the same round go to the browser as usual, and
// /continue brings their results: the loop resumes with whichever comes
// last.

// Bounds of an approval's wait.
const (
	DefaultInterruptTimeout = time.Hour
	MinInterruptTimeout     = 10 * time.Second
	// MaxInterruptTimeout stays under what a push service keeps a message
	// (webpush.MaxTTL), and a waiting loop is not a task.
	MaxInterruptTimeout = 7 * 24 * time.Hour
)

// Approvals are a session's approval tools.
type Approvals struct {
	Tools []string `json:"tools,omitempty"`
	// TimeoutSeconds is how long a call waits for a decision; 0 is the
	// agent's InterruptTimeout.
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`
}

// IsZero reports whether no tool needs approval.
func (ap Approvals) IsZero() bool { return len(ap.Tools) == 0 && ap.TimeoutSeconds == 0 }

func (ap Approvals) timeout(fallback time.Duration) time.Duration {
	if ap.TimeoutSeconds > 0 {
		return time.Duration(ap.TimeoutSeconds) * time.Second
	}
	return fallback
}

// InterruptEntry is an approval as the transcript records it: on an
// interrupt message when asked, on a decision message when settled.
type InterruptEntry struct {
	ID        string `json:"id"`
	CallID    string `json:"toolCallId"`
	Name      string `json:"name,omitempty"`
	State     string `json:"state"`
	ExpiresAt string `json:"expiresAt,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// DecidedBy is the id of the device that decided; 0 for the page or a
	// device that did not say, and for an expiry.
	DecidedBy int64  `json:"decidedBy,omitempty"`
	DecidedAt string `json:"decidedAt,omitempty"`
	Push      string `json:"-"` // the approval's push, recorded in the message's pushes
}

// interruptBody is what an interrupt keeps sealed: the call, and what the
// server needs to resume the loop on its own (the LLM credentials and how
// its pushes present themselves).
type interruptBody struct {
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args,omitempty"`
	Resume resumeState     `json:"resume"`
}

type resumeState struct {
	APIURL         string          `json:"apiUrl,omitempty"`
	APIKey         string          `json:"apiKey,omitempty"`
	Model          string          `json:"model,omitempty"`
	MaxTokens      int             `json:"maxTokens,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	ExtraBody      json.RawMessage `json:"extraBody,omitempty"`
	ContactName    string          `json:"contactName,omitempty"`
	AvatarURL      json.RawMessage `json:"avatarUrl,omitempty"`
	MessageSubtype string          `json:"messageSubtype,omitempty"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	Language       string          `json:"language,omitempty"`
	Title          string          `json:"title"`
	Tag            string          `json:"tag"`
}

// decisionKey signs decision tokens: HMAC-SHA256 of the interrupt id under
// a key derived from the master key, so a token is bound to its interrupt
// and only this server (or another instance on the same database) makes
// one. The interrupt's fenced state makes it single-use.
type decisionKey []byte

func newDecisionKey(masterKey string) decisionKey {
	k := sha256.Sum256([]byte("amsg interrupt decision\x00" + masterKey))
	return k[:]
}

func (k decisionKey) mac(interruptID string) []byte {
	m := hmac.New(sha256.New, k)
	m.Write([]byte(interruptID))
	return m.Sum(nil)
}

// DecisionToken is the token that decides interruptID.
func (a *Agent) DecisionToken(interruptID string) string {
	return base64.RawURLEncoding.EncodeToString(a.decisionKey.mac(interruptID))
}

// CheckDecisionToken is ErrDecisionToken unless token decides interruptID;
// it compares in constant time.
func (a *Agent) CheckDecisionToken(interruptID, token string) error {
	got, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || !hmac.Equal(got, a.decisionKey.mac(interruptID)) {
		return ErrDecisionToken
	}
	return nil
}

// ErrDecisionToken is a decision whose token is not its interrupt's.
var ErrDecisionToken = errors.New("loop: the decision token does not match the interrupt")

// Decision is a person's answer to an approval.
type Decision struct {
	InterruptID string
	Token       string
	Approve     bool
	Reason      string // with a denial, passed to the model
	DeviceID    int64  // the deciding device, 0 when unknown
}

// Decide settles an interrupt with the person's decision and records it in
// the transcript. A bad token is ErrDecisionToken; the store's
// ErrInterruptNotFound, ErrInterruptExpired and ErrInterruptDecided say why
// nothing changed. The caller then resumes the loop (ResumeInterrupt).
func (a *Agent) Decide(ctx context.Context, d Decision) (*store.Interrupt, error) {
	if err := a.CheckDecisionToken(d.InterruptID, d.Token); err != nil {
		return nil, err
	}
	state := store.InterruptDenied
	if d.Approve {
		state = store.InterruptApproved
	}
	in, err := a.transcripts.store.DecideInterrupt(ctx, store.InterruptDecision{ID: d.InterruptID, State: state,
		Reason: d.Reason, DecidedBy: d.DeviceID, At: a.now()})
	if err != nil {
		return nil, err
	}
	a.recordOutcome(ctx, in)
	return in, nil
}

// ExpireInterrupts settles up to limit interrupts whose time ran out, and
// records them; the caller resumes each loop and replaces each
// notification. Instances sharing a database get disjoint sets.
func (a *Agent) ExpireInterrupts(ctx context.Context, limit int) ([]store.Interrupt, error) {
	list, err := a.transcripts.store.ExpireInterrupts(ctx, a.now(), limit)
	if err != nil {
		return nil, err
	}
	for i := range list {
		a.recordOutcome(ctx, &list[i])
	}
	return list, nil
}

// NextInterruptExpiry is when the earliest pending interrupt expires; zero
// when none is pending.
func (a *Agent) NextInterruptExpiry(ctx context.Context) (time.Time, error) {
	return a.transcripts.store.NextInterruptExpiry(ctx)
}

func (a *Agent) recordOutcome(ctx context.Context, in *store.Interrupt) {
	entry := InterruptEntry{ID: in.ID, CallID: in.ToolCallID, State: string(in.State), Reason: in.Reason,
		DecidedBy: in.DecidedBy, DecidedAt: push.FormatTimestamp(in.DecidedAt)}
	if _, err := a.transcripts.Append(ctx, UserOwner(in.UserID), in.SessionID, AnySeq, nil,
		Message{Type: MessageDecision, Iteration: in.Iteration, Interrupt: &entry}); err != nil {
		a.log.ErrorContext(ctx, "could not record an approval's outcome in the transcript", "sessionId", in.SessionID, "interrupt", in.ID, "err", err)
	}
}

// ResumeInterrupt continues the loop an interrupt paused once every
// interrupt of its round is settled: the round to execute, or nil while
// another approval of the round is pending. A *ContinueError says the
// round does not resume here: it waits for the browser's results of its
// other calls (Conflict false), or another request resumed it first or the
// loop moved on (Conflict true).
func (a *Agent) ResumeInterrupt(ctx context.Context, in *store.Interrupt) (*Run, error) {
	round, err := a.transcripts.store.RoundInterrupts(ctx, in.UserID, in.SessionID, in.Iteration)
	if err != nil {
		return nil, err
	}
	results := make([]json.RawMessage, 0, len(round))
	for i := range round {
		if round[i].State == store.InterruptPending {
			return nil, nil
		}
		results = append(results, approvalResult(&round[i]))
	}
	var body interruptBody
	if err := json.Unmarshal(in.Body, &body); err != nil {
		return nil, fmt.Errorf("loop: interrupt %s: %w", in.ID, err)
	}
	rs := body.Resume
	run, err := a.Resume(ctx, Resume{Owner: UserOwner(in.UserID), SessionID: in.SessionID, Iteration: in.Iteration + 1,
		Call: llm.Request{APIURL: rs.APIURL, APIKey: rs.APIKey, Model: rs.Model, MaxTokens: rs.MaxTokens,
			Temperature: rs.Temperature, ExtraBody: rs.ExtraBody, Messages: push.MustMarshalNoEscape(results)},
		Presentation: Presentation{ContactName: rs.ContactName, AvatarURL: rs.AvatarURL, MessageSubtype: rs.MessageSubtype,
			Metadata: rs.Metadata, Language: rs.Language},
	})
	return run, err
}

// UnresumedInterrupts returns up to limit settled interrupts settled at or
// before settledBefore whose round was never marked followed
// (MarkResumed): their instance stopped or died between the decision and
// the loop's next round.
func (a *Agent) UnresumedInterrupts(ctx context.Context, settledBefore time.Time, limit int) ([]store.Interrupt, error) {
	return a.transcripts.store.UnresumedInterrupts(ctx, settledBefore, limit)
}

// MarkResumed records that the round in paused has been followed: resumed,
// or found with nothing to resume.
func (a *Agent) MarkResumed(ctx context.Context, in *store.Interrupt) error {
	return a.transcripts.store.MarkRoundResumed(ctx, in.UserID, in.SessionID, in.Iteration, a.now())
}

// ClaimTimeout is how long a round claimed by a request or a resumed
// approval holds before another may take it over.
func (a *Agent) ClaimTimeout() time.Duration { return a.claimTimeout }

// approvalResult is the tool message a settled interrupt answers its call
// with.
func approvalResult(in *store.Interrupt) json.RawMessage {
	var content any
	switch in.State {
	case store.InterruptApproved:
		content = map[string]bool{"approved": true}
	case store.InterruptExpired:
		content = map[string]bool{"approved": false, "expired": true}
	default:
		denied := map[string]any{"approved": false}
		if in.Reason != "" {
			denied["reason"] = in.Reason
		}
		content = denied
	}
	return push.MustMarshalNoEscape(map[string]string{"role": "tool", "tool_call_id": in.ToolCallID,
		"content": string(push.MustMarshalNoEscape(content))})
}

// withDecisions completes /continue's results with the results of the
// round's settled approvals; a call still waiting for a decision is a
// conflict: the request comes back once it is settled.
func (a *Agent) withDecisions(ctx context.Context, owner Owner, sessionID string, iteration int, results []json.RawMessage) ([]json.RawMessage, error) {
	round, err := a.transcripts.store.RoundInterrupts(ctx, string(owner), sessionID, iteration)
	if err != nil {
		return nil, err
	}
	for i := range round {
		in := &round[i]
		if slices.ContainsFunc(results, func(r json.RawMessage) bool { return toolCallID(r) == in.ToolCallID }) {
			continue
		}
		if in.State == store.InterruptPending {
			return nil, &ContinueError{Conflict: true, Expected: iteration + 1,
				Reason: fmt.Sprintf("tool call %q waits for the person's decision (interrupt %s)", in.ToolCallID, in.ID)}
		}
		results = append(results, approvalResult(in))
	}
	return results, nil
}

// InterruptView is an interrupt as the API shows it.
type InterruptView struct {
	ID          string
	SessionID   string
	Iteration   int
	ToolCallID  string
	Name        string
	Args        json.RawMessage
	State       store.InterruptState
	ContactName string
	Language    string
	Tag         string
	Reason      string
	DecidedBy   int64
	CreatedAt   time.Time
	ExpiresAt   time.Time
	DecidedAt   time.Time
}

// ViewInterrupt opens an interrupt's body.
func ViewInterrupt(in *store.Interrupt) (InterruptView, error) {
	var body interruptBody
	if err := json.Unmarshal(in.Body, &body); err != nil {
		return InterruptView{}, fmt.Errorf("loop: interrupt %s: %w", in.ID, err)
	}
	return InterruptView{ID: in.ID, SessionID: in.SessionID, Iteration: in.Iteration, ToolCallID: in.ToolCallID,
		Name: body.Name, Args: body.Args, State: in.State, ContactName: body.Resume.ContactName,
		Language: body.Resume.Language, Tag: body.Resume.Tag, Reason: in.Reason, DecidedBy: in.DecidedBy,
		CreatedAt: in.CreatedAt, ExpiresAt: in.ExpiresAt, DecidedAt: in.DecidedAt}, nil
}

// OutcomePush is the quiet push that replaces a settled interrupt's
// notification on the devices that did not decide it.
func (a *Agent) OutcomePush(in *store.Interrupt) (*push.ContentPush, error) {
	var body interruptBody
	if err := json.Unmarshal(in.Body, &body); err != nil {
		return nil, fmt.Errorf("loop: interrupt %s: %w", in.ID, err)
	}
	rs := body.Resume
	key := map[store.InterruptState]notifytext.Key{store.InterruptApproved: notifytext.ApprovedElsewhere,
		store.InterruptDenied: notifytext.DeclinedElsewhere, store.InterruptExpired: notifytext.NoLongerWaiting}[in.State]
	return a.builder.BuildOutcomePush(builders.Common{MessageType: push.TypeInstant, Source: push.SourceInstant,
		MessageID: "msg_" + push.NewUUID() + "_interrupt_" + string(in.State), SessionID: in.SessionID,
		MessageSubtype: rs.MessageSubtype, Metadata: json.RawMessage("{}")},
		builders.Outcome{InterruptID: in.ID, ToolCallID: in.ToolCallID, State: string(in.State), Title: rs.Title,
			Text: notifytext.Text(notifytext.English, key), ContactName: rs.ContactName, Tag: rs.Tag})
}

// requestApprovals ends a round whose tool calls include approval tools:
// an interrupt and an approval push per such call, then the usual
// tool_request push for the others, if any. The round is recorded in the
// transcript before anything goes out, so a decision never finds the
// session without the calls it answers. ok is false when no call needs
// approval (or the calls do not decode): the usual path handles the round.
func (r *Run) requestApprovals(ctx context.Context, p *roundPusher, resp *llm.Response) (out Outcome, ok bool, err error) {
	calls, cerr := resp.Calls()
	var raws []json.RawMessage
	if cerr != nil || json.Unmarshal(resp.ToolCalls, &raws) != nil || len(raws) != len(calls) {
		return Outcome{}, false, nil
	}
	var asked []int
	var others []json.RawMessage
	for i, c := range calls {
		if slices.Contains(r.approvals.Tools, c.Function.Name) {
			asked = append(asked, i)
		} else {
			others = append(others, raws[i])
		}
	}
	if len(asked) == 0 {
		return Outcome{}, false, nil
	}
	now := r.a.now()
	expires := now.Add(r.approvals.timeout(r.a.interruptTimeout))
	// The push's texts are amsg's, built in English like its other texts:
	// the courier speaks each device's language (builders.Localize).
	lang := notifytext.English
	title := notifytext.Text(lang, notifytext.DefaultTitle)
	who := r.pres.ContactName
	if who != "" {
		title = notifytext.Text(lang, notifytext.FromContact, who)
	} else {
		who = notifytext.Text(lang, notifytext.Companion)
	}
	var pushes []push.Push
	var rows []store.Interrupt
	for n, i := range asked {
		c := calls[i]
		id := "int_" + push.NewUUID()
		tag := builders.SessionTag(r.sessionID)
		if len(asked) > 1 { // each its own notification
			tag += "-" + strconv.Itoa(n)
		}
		rs := r.resumeState(title, tag)
		body, err := push.MarshalNoEscape(interruptBody{Name: c.Function.Name, Args: argsJSON(c.Function.Arguments), Resume: rs})
		if err != nil {
			return Outcome{}, true, err
		}
		ap, err := r.a.builder.BuildApprovalPush(builders.ToolRequestArgs{Common: r.common("approval_" + strconv.Itoa(n)),
			ToolCalls: push.MustMarshalNoEscape([]json.RawMessage{raws[i]}), Title: r.title(), ContactName: r.pres.ContactName},
			builders.Approval{InterruptID: id, ToolCallID: c.ID, ExpiresAt: expires, DecisionToken: r.a.DecisionToken(id),
				Title: title, Body: notifytext.Text(lang, notifytext.ApprovalBody, who, c.Function.Name),
				ApproveTitle: notifytext.Text(lang, notifytext.ApproveAction), DenyTitle: notifytext.Text(lang, notifytext.DenyAction), Tag: tag})
		if err != nil {
			return Outcome{}, true, r.llmFailure("AI API error: malformed tool_calls: "+err.Error(), err)
		}
		pushes = append(pushes, ap)
		rows = append(rows, store.Interrupt{ID: id, UserID: string(r.owner), SessionID: r.sessionID, Iteration: r.iteration,
			ToolCallID: c.ID, Body: body, CreatedAt: now, ExpiresAt: expires})
		p.round.Interrupts = append(p.round.Interrupts, InterruptEntry{ID: id, CallID: c.ID, Name: c.Function.Name,
			State: string(store.InterruptPending), ExpiresAt: push.FormatTimestamp(expires), Push: ap.MessageID})
	}
	if len(others) > 0 {
		tr, err := r.a.builder.BuildToolRequestPush(builders.ToolRequestArgs{Common: r.common("tool_request"),
			ToolCalls: push.MustMarshalNoEscape(others), Title: r.title(), ContactName: r.pres.ContactName})
		if err != nil {
			return Outcome{}, true, r.llmFailure("AI API error: malformed tool_calls: "+err.Error(), err)
		}
		pushes = append(pushes, tr)
		p.round.ToolRequestPush = tr.MessageID
	}
	if err := r.a.transcripts.store.CreateInterrupts(ctx, rows); err != nil {
		return Outcome{}, true, err
	}
	if err := p.recordEarly(ctx); err != nil {
		return Outcome{}, true, err
	}
	for _, pp := range pushes {
		if err := p.emitBurst(pp); err != nil {
			return Outcome{}, true, &Failure{Code: errcode.PushSendFailed.Code(), Message: err.Error(), MessageIndex: p.sent + 1, Err: err}
		}
	}
	return Outcome{Status: StatusToolRequested, Iteration: r.iteration}, true, nil
}

// resumeState is what the server needs to run the loop's next round
// without a request.
func (r *Run) resumeState(title, tag string) resumeState {
	c := r.call
	return resumeState{APIURL: c.APIURL, APIKey: c.APIKey, Model: c.Model, MaxTokens: c.MaxTokens, Temperature: c.Temperature,
		ExtraBody: c.ExtraBody, ContactName: r.pres.ContactName, AvatarURL: r.pres.AvatarURL, MessageSubtype: r.pres.MessageSubtype,
		Metadata: r.pres.Metadata, Language: r.pres.Language, Title: title, Tag: tag}
}

// recordEarly records the round so far in the transcript; Execute then
// records only what follows.
func (p *roundPusher) recordEarly(ctx context.Context) error {
	r := p.run
	p.round.Text = push.JSTrim(p.visible.String())
	msgs := p.round.messages()
	if _, err := r.a.transcripts.Append(ctx, r.owner, r.sessionID, AnySeq, nil, msgs...); err != nil {
		return err
	}
	p.recorded = len(msgs)
	return nil
}
