package loop

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"amsg/builders"
	"amsg/llm"
	"amsg/push"
	"amsg/push/errcode"
	"amsg/store"
)

// DefaultMaxIterations bounds an agent loop's rounds, as the standard's
// DEFAULT_MAX_LOOP_ITERATIONS does.
const DefaultMaxIterations = 10

// Status is how a request's round ended, the standard's result status.
type Status string

// Statuses.
const (
	StatusFinished        Status = "finished"         // the model replied; the loop is over
	StatusToolRequested   Status = "tool_requested"   // a tool_request push went out; /continue resumes
	StatusLoopExceeded    Status = "loop_exceeded"    // the model asked for tools once more than allowed
	StatusBudgetExhausted Status = "budget_exhausted" // the session's token budget is spent
)

// AgentConfig configures an Agent.
type AgentConfig struct {
	Client      *llm.Client
	Transcripts *Transcripts
	// MaxIterations bounds a loop's rounds; 0 means DefaultMaxIterations.
	MaxIterations int
	// TokenBudget caps the tokens of every session (input plus output, all
	// rounds); a request may ask for less. 0 is no cap.
	TokenBudget int64
	// ClaimTimeout is how long an iteration claimed by /continue stays
	// claimed when its round never ends (the process died mid-round); 0
	// means the client's timeout plus DefaultClaimMargin.
	ClaimTimeout time.Duration
	// Instance names this process among those sharing the database; its
	// claims carry it. Liveness, when set, tells whether the instance of a
	// claim still runs: a claim of a dead one is abandoned at once. Without
	// Liveness, claims made before the Agent was created are abandoned at
	// once instead (one process per database: a round does not outlive it).
	Instance string
	Liveness Liveness
	Now      func() time.Time // nil: time.Now
	Logger   *slog.Logger     // nil: slog.Default()
	// PageURL is the companion page's origin; with it content pushes are
	// Declarative Web Push messages (builders.Builder.PageURL).
	PageURL string
	// InterruptTimeout is how long an approval waits for a decision when
	// the request does not say; 0 means DefaultInterruptTimeout.
	InterruptTimeout time.Duration
}

// Liveness tells whether an instance still runs.
type Liveness interface {
	InstanceAlive(ctx context.Context, instance string) (bool, error)
}

// DefaultClaimMargin is what a claim outlives the LLM call by: the time to
// send a round's pushes, with retries.
const DefaultClaimMargin = 5 * time.Minute

// Agent runs the agent loop behind /instant and /continue. Each request
// runs one round: one streamed LLM call whose reasoning, sentences and tool
// calls become pushes as they arrive, recorded in the session's transcript.
// A round that asks for tools ends with a tool_request push and pauses the
// loop; Resume continues it with the results. It is safe for concurrent
// use.
type Agent struct {
	client        *llm.Client
	transcripts   *Transcripts
	maxIterations int
	tokenBudget   int64
	claimTimeout  time.Duration
	started       time.Time // on the transcripts' clock
	instance      string
	liveness      Liveness
	builder       builders.Builder
	now           func() time.Time
	log           *slog.Logger

	interruptTimeout time.Duration
	decisionKey      decisionKey
}

// NewAgent returns an Agent for cfg.
func NewAgent(cfg AgentConfig) *Agent {
	a := &Agent{client: cfg.Client, transcripts: cfg.Transcripts, maxIterations: cfg.MaxIterations,
		tokenBudget: cfg.TokenBudget, claimTimeout: cfg.ClaimTimeout, instance: cfg.Instance, liveness: cfg.Liveness,
		now: cfg.Now, log: cfg.Logger, interruptTimeout: cmp.Or(max(cfg.InterruptTimeout, 0), DefaultInterruptTimeout)}
	if a.maxIterations <= 0 {
		a.maxIterations = DefaultMaxIterations
	}
	if a.claimTimeout <= 0 {
		a.claimTimeout = llm.DefaultLLMTimeout + DefaultClaimMargin
		if a.client != nil {
			a.claimTimeout = a.client.Timeout() + DefaultClaimMargin
		}
	}
	if a.transcripts != nil {
		a.started = a.transcripts.now()
		a.decisionKey = newDecisionKey(a.transcripts.store.Secrets().MasterKey)
	}
	if a.now == nil {
		a.now = time.Now
	}
	a.log = cmp.Or(a.log, slog.Default())
	a.builder = builders.Builder{Now: a.now, PageURL: cfg.PageURL}
	return a
}

// Now is the agent's clock.
func (a *Agent) Now() time.Time { return a.now() }

// MaxIterations is the loop bound: iterations run from 0 to MaxIterations-1.
func (a *Agent) MaxIterations() int { return a.maxIterations }

// Transcripts is where the agent records its sessions.
func (a *Agent) Transcripts() *Transcripts { return a.transcripts }

// Presentation is how a request's pushes present themselves.
type Presentation struct {
	ContactName string
	// AvatarURL is the request's avatarUrl as given (nil when absent); the
	// builders clear a bad one to null.
	AvatarURL      json.RawMessage
	MessageSubtype string          // "" means push.DefaultSubtype
	Metadata       json.RawMessage // the caller's object; nil or null means {}
	// Language is a BCP 47 tag (Accept-Language) for the texts amsg writes
	// itself (notifytext); "" is English.
	Language string
}

// Start is a request that starts a loop (/instant).
type Start struct {
	Owner     Owner
	SessionID string
	Iteration int
	// Call is the LLM call: credentials, Messages or Prompt, tools.
	Call llm.Request
	Presentation
	// TokenBudget is the session's budget the request asks for; 0 takes the
	// agent's.
	TokenBudget int64
	// Approvals name the tools whose calls wait for the person's decision;
	// they need an Owner that is a user. The session keeps them.
	Approvals Approvals
}

// Resume is a request that continues a loop paused on a tool request
// (/continue).
type Resume struct {
	Owner     Owner
	SessionID string
	// Iteration is the iteration the request says it continues with; -1
	// when it does not say, which takes the session's.
	Iteration int
	// Call is the LLM call. Its Messages are either the whole history
	// (ending with the tool results, the standard's way) or only role
	// "tool" messages, in which case the history is restored from the
	// transcript. Tools, when empty, are the session's.
	Call llm.Request
	Presentation
}

// ContinueError is why a Resume cannot proceed.
type ContinueError struct {
	// Conflict is true when the iteration was claimed by another request
	// or the session waits for no results (HTTP 409); false when the
	// results do not answer the pending calls (HTTP 400).
	Conflict bool
	// Expected is the iteration the session waits for, -1 when none.
	Expected int
	Reason   string
}

func (e *ContinueError) Error() string { return e.Reason }

// Run is a prepared round, claimed in the transcript and ready to execute.
type Run struct {
	a         *Agent
	owner     Owner
	sessionID string
	iteration int
	resumed   bool
	call      llm.Request
	pres      Presentation
	budget    int64
	used      store.TokenUsage
	approvals Approvals
}

// SessionID is the session the round belongs to.
func (r *Run) SessionID() string { return r.sessionID }

// Iteration is the round's iteration.
func (r *Run) Iteration() int { return r.iteration }

// Start records the request's input in its session (created if new, its
// settings replaced by the request's) and returns the round to execute.
func (a *Agent) Start(ctx context.Context, s Start) (*Run, error) {
	budget := s.TokenBudget
	if a.tokenBudget > 0 && (budget <= 0 || budget > a.tokenBudget) {
		budget = a.tokenBudget
	}
	settings := Settings{Tools: s.Call.Tools, ToolChoice: s.Call.ToolChoice, TokenBudget: budget, Approvals: s.Approvals}
	input := s.Call.Messages
	if push.JSONKind(input) != '[' {
		input = llm.PromptMessages(s.Call.Prompt)
	}
	// The session may be reused: what earlier loops spent counts.
	head, err := a.transcripts.Append(ctx, s.Owner, s.SessionID, AnySeq, &settings, inputMessage(s.Iteration, input))
	if err != nil {
		return nil, err
	}
	return &Run{a: a, owner: s.Owner, sessionID: s.SessionID, iteration: s.Iteration, call: s.Call,
		pres: s.Presentation, budget: budget, used: head.Usage, approvals: s.Approvals}, nil
}

// Resume claims the iteration the session waits for and returns the round
// to execute: exactly one of several requests for the same iteration gets
// it, the others a conflict *ContinueError. A session the owner does not
// have is ErrSessionNotFound when the request brings only the results; with
// the whole history it is started afresh, as the standard's stateless
// server would.
func (a *Agent) Resume(ctx context.Context, r Resume) (*Run, error) {
	var msgs []json.RawMessage
	if err := json.Unmarshal(r.Call.Messages, &msgs); err != nil || len(msgs) == 0 {
		return nil, &ContinueError{Expected: -1, Reason: "messages must be a non-empty array"}
	}
	split := len(msgs) // msgs[split:] are the trailing tool results
	for split > 0 && roleOf(msgs[split-1]) == "tool" {
		split--
	}
	resultsOnly := split == 0
	run := &Run{a: a, owner: r.Owner, sessionID: r.SessionID, resumed: true, call: r.Call, pres: r.Presentation}

	tr, err := a.transcripts.Load(ctx, r.Owner, r.SessionID)
	switch {
	case errors.Is(err, ErrSessionNotFound) && resultsOnly:
		return nil, err
	case errors.Is(err, ErrSessionNotFound):
		run.iteration = max(r.Iteration, 0)
		run.budget = a.tokenBudget
		settings := Settings{Tools: r.Call.Tools, ToolChoice: r.Call.ToolChoice, TokenBudget: run.budget}
		_, err = a.transcripts.Append(ctx, r.Owner, r.SessionID, 0, &settings,
			inputMessage(run.iteration, push.MustMarshalNoEscape(msgs[:split])),
			a.claim(toolResultsMessage(run.iteration, msgs[split:], nil)))
		return run, continueConflict(err, -1)
	case err != nil:
		return nil, err
	}

	history, calls, next, err := tr.replay(a.abandoned(ctx))
	if err != nil || calls == nil {
		return nil, &ContinueError{Conflict: true, Expected: -1, Reason: "the session waits for no tool results: another /continue handled them, or the loop is over"}
	}
	if r.Iteration >= 0 && r.Iteration != next {
		return nil, &ContinueError{Conflict: true, Expected: next,
			Reason: fmt.Sprintf("the session waits for the results of iteration %d, not %d", next, r.Iteration)}
	}
	results := msgs[split:]
	if resultsOnly && !tr.Settings.Approvals.IsZero() {
		if results, err = a.withDecisions(ctx, r.Owner, r.SessionID, next-1, results); err != nil {
			return nil, err
		}
	}
	if resultsOnly {
		if err := checkResults(results, calls); err != nil {
			return nil, &ContinueError{Expected: next, Reason: err.Error()}
		}
		if run.call.Messages, err = push.MarshalNoEscape(append(history, results...)); err != nil {
			return nil, err
		}
	}
	run.iteration, run.budget, run.used, run.approvals = next, tr.Settings.TokenBudget, tr.Usage, tr.Settings.Approvals
	var settings *Settings
	if push.JSONKind(r.Call.Tools) == '[' {
		settings = &Settings{Tools: r.Call.Tools, ToolChoice: r.Call.ToolChoice, TokenBudget: run.budget, Approvals: run.approvals}
	} else {
		run.call.Tools, run.call.ToolChoice = tr.Settings.Tools, tr.Settings.ToolChoice
	}
	_, err = a.transcripts.Append(ctx, r.Owner, r.SessionID, tr.LastSeq(), settings, a.claim(toolResultsMessage(next, results, calls)))
	return run, continueConflict(err, next)
}

// abandoned reports whether a claim's round died: it is older than the
// claim timeout, or its instance is gone (with Liveness), or it predates
// this Agent (without Liveness, or for a claim that names no instance).
func (a *Agent) abandoned(ctx context.Context) func(Message) bool {
	now := a.transcripts.now()
	return func(claim Message) bool {
		switch {
		case claim.Timestamp.Before(now.Add(-a.claimTimeout)):
			return true
		case a.liveness == nil || claim.ClaimedBy == "":
			return claim.Timestamp.Before(a.started)
		case claim.ClaimedBy == a.instance:
			return false
		}
		alive, err := a.liveness.InstanceAlive(ctx, claim.ClaimedBy)
		if err != nil {
			a.log.Warn("loop: cannot tell whether a claim's instance runs; the claim holds", "instance", claim.ClaimedBy, "err", err)
		}
		return err == nil && !alive
	}
}

// continueConflict turns a lost compare-and-append into the conflict error.
func continueConflict(err error, expected int) error {
	if errors.Is(err, ErrConcurrentAppend) {
		return &ContinueError{Conflict: true, Expected: expected, Reason: "another /continue claimed this iteration first"}
	}
	return err
}

func roleOf(msg json.RawMessage) string {
	var m struct {
		Role string `json:"role"`
	}
	_ = json.Unmarshal(msg, &m)
	return m.Role
}

func toolCallID(msg json.RawMessage) string {
	var m struct {
		ID string `json:"tool_call_id"`
	}
	_ = json.Unmarshal(msg, &m)
	return m.ID
}

// checkResults requires one result per pending call, no more: a provider
// refuses a history whose tool calls are not all answered.
func checkResults(results []json.RawMessage, calls []ToolCallEntry) error {
	want := map[string]bool{}
	for _, c := range calls {
		want[c.ID] = true
	}
	seen := map[string]bool{}
	for i, r := range results {
		id := toolCallID(r)
		if !want[id] {
			return fmt.Errorf("messages[%d].tool_call_id %q answers no pending tool call", i, id)
		}
		if seen[id] {
			return fmt.Errorf("messages[%d] answers tool call %q a second time", i, id)
		}
		seen[id] = true
	}
	for _, c := range calls {
		if !seen[c.ID] {
			return fmt.Errorf("the result of tool call %q is missing", c.ID)
		}
	}
	return nil
}

// toolResultsMessage records role "tool" messages, named after the calls
// they answer when known.
// claim marks tool results as this instance's claim on the round they feed.
func (a *Agent) claim(m Message) Message {
	m.ClaimedBy = a.instance
	return m
}

func toolResultsMessage(iteration int, results []json.RawMessage, calls []ToolCallEntry) Message {
	names := map[string]string{}
	for _, c := range calls {
		names[c.ID] = c.Name
	}
	m := Message{Type: MessageToolResults, Iteration: iteration}
	for _, raw := range results {
		var r struct {
			ID      string          `json:"tool_call_id"`
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(raw, &r)
		m.Results = append(m.Results, ToolResultEntry{CallID: r.ID, Name: names[r.ID], Output: push.CompactJSON(r.Content)})
	}
	return m
}

// Emit delivers one push of a round, in order. For a content or tool_request
// push an error aborts the round (a failure of code PUSH_SEND_FAILED); the
// reasoning and error pushes are best effort.
type Emit func(p push.Push) error

// Outcome is how a round ended without failing.
type Outcome struct {
	SessionID string
	Status    Status
	Iteration int // the round's; for loop_exceeded the bound
	// MessagesSent counts the content and tool_request pushes delivered.
	MessagesSent int
	SentAt       time.Time
}

// Failure is a round that could not finish.
type Failure struct {
	Code    string // errcode.LLMCallFailed's or errcode.PushSendFailed's
	Message string
	// Push is the error push to deliver about the failure; nil when
	// pushes themselves failed.
	Push *push.ErrorPush
	// MessageIndex is the 1-based position of the push that failed.
	MessageIndex int
	Err          error
}

func (f *Failure) Error() string { return f.Code + ": " + f.Message }
func (f *Failure) Unwrap() error { return f.Err }

// recordTimeout bounds the write of a round's transcript after its ctx
// ended.
const recordTimeout = 10 * time.Second

// Execute runs the round: it streams the LLM call and hands each push to
// emit as soon as it is known, in this order: the reasoning (as soon as the
// model moves on from it), each sentence of the reply once complete, then
// the tool request or the push that stops the loop. The round is recorded
// in the transcript whatever happens. ctx should not be the request's: a
// client that goes away must not stop the round.
func (r *Run) Execute(ctx context.Context, emit Emit) (Outcome, error) {
	p := &roundPusher{run: r, emit: emit, seg: llm.DefaultSplitter().NewSegmenter(), round: Round{Iteration: r.iteration}}
	out, err := r.execute(ctx, p)
	f := (*Failure)(nil)
	if errors.As(err, &f) {
		p.round.Error = &RoundError{Code: f.Code, Message: f.Message}
		if f.Push != nil {
			p.round.Error.Push = f.Push.MessageID
		}
	}
	p.round.Text = push.JSTrim(p.visible.String())
	if msgs := p.round.messages()[p.recorded:]; len(msgs) > 0 {
		// Recorded even when ctx ended (a shutdown interrupted the round).
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		defer cancel()
		if _, rerr := r.a.transcripts.Append(rctx, r.owner, r.sessionID, AnySeq, nil, msgs...); rerr != nil {
			r.a.log.ErrorContext(ctx, "could not record a round in the transcript", "sessionId", r.sessionID, "err", rerr)
		}
	}
	out.SessionID, out.MessagesSent, out.SentAt = r.sessionID, p.sent, r.a.now()
	attrs := []any{"sessionId", r.sessionID, "iteration", r.iteration, "pushes", p.sent}
	if f != nil {
		// The code only: an LLM error's text holds the endpoint URL, whose
		// query may carry a key.
		r.a.log.WarnContext(ctx, "agent round failed", append(attrs, "code", f.Code)...)
	} else {
		r.a.log.DebugContext(ctx, "agent round", append(attrs, "status", out.Status, "sessionTokens", r.used.Total())...)
	}
	return out, err
}

func (r *Run) execute(ctx context.Context, p *roundPusher) (Outcome, error) {
	if r.budget > 0 && r.used.Total() >= r.budget {
		return r.stop(p, errcode.BudgetExhausted, r.iteration), nil
	}
	call := r.call
	call.RequireContent = false // an answer may be tool calls only; checked below
	resp, err := r.a.client.Stream(ctx, call, p.delta)
	if err == nil {
		err = p.end(resp)
	}
	var pf *pushFailure
	switch {
	case errors.As(err, &pf):
		return Outcome{}, &Failure{Code: errcode.PushSendFailed.Code(), Message: pf.err.Error(), MessageIndex: pf.index, Err: pf.err}
	case err != nil:
		return Outcome{}, r.llmFailure(err.Error(), err)
	}
	p.round.Response = resp
	r.used = r.used.Add(usageOf(resp.Usage))
	if resp.ToolCalls == nil {
		return Outcome{Status: StatusFinished, Iteration: r.iteration}, nil
	}
	switch {
	case r.iteration+1 >= r.a.maxIterations:
		return r.stop(p, errcode.LoopExceeded, r.a.maxIterations), nil
	case r.budget > 0 && r.used.Total() >= r.budget:
		return r.stop(p, errcode.BudgetExhausted, r.iteration), nil
	}
	if len(r.approvals.Tools) > 0 {
		if out, ok, err := r.requestApprovals(ctx, p, resp); ok {
			return out, err
		}
	}
	tr, err := r.a.builder.BuildToolRequestPush(builders.ToolRequestArgs{
		Common: r.common("tool_request"), ToolCalls: resp.ToolCalls, Title: r.title(), ContactName: r.pres.ContactName,
	})
	if err != nil {
		// The model's tool_calls are not an array of objects.
		return Outcome{}, r.llmFailure(errcode.MalformedToolCalls.With(err.Error()).English(), err)
	}
	if err := p.emitBurst(tr); err != nil {
		return Outcome{}, &Failure{Code: errcode.PushSendFailed.Code(), Message: err.Error(), MessageIndex: p.sent + 1, Err: err}
	}
	p.round.ToolRequestPush = tr.MessageID
	return Outcome{Status: StatusToolRequested, Iteration: r.iteration}, nil
}

// llmFailure is a failed LLM call, with the error push that reports it and
// what the LLM answered (its status, and the code of its error body, which
// the client leaves out for a caller-chosen endpoint).
func (r *Run) llmFailure(message string, err error) *Failure {
	a := builders.ErrorArgs{Code: errcode.LLMCallFailed.Code(), Message: message}
	var le *llm.Error
	if errors.As(err, &le) {
		a.LLMStatus, a.ProviderCode = le.Status, le.ProviderCode
	}
	return &Failure{Code: errcode.LLMCallFailed.Code(), Message: message, Err: err, Push: r.errorPush(a, "error")}
}

// stop ends the loop with an error push instead of a call or a tool
// request: errcode.LoopExceeded or errcode.BudgetExhausted. The push says
// the standard's English.
func (r *Run) stop(p *roundPusher, reason *errcode.Message, iteration int) Outcome {
	var msg, suffix string
	status := StatusLoopExceeded
	if reason == errcode.LoopExceeded {
		msg, suffix = errcode.LoopExceededAfter.With(r.a.maxIterations).English(), "loop_exceeded"
	} else {
		msg = errcode.BudgetExhaustedAfter.With(r.budget, r.used.Total()).English()
		suffix, status = "budget_exhausted", StatusBudgetExhausted
	}
	code := reason.Code()
	ep := r.errorPush(builders.ErrorArgs{Code: code, Message: msg, Iteration: push.Some(iteration)}, suffix)
	p.pushReasoning()
	if err := p.emit(ep); err != nil {
		r.a.log.Warn("could not deliver an error push", "sessionId", r.sessionID, "code", code, "err", err)
	}
	p.round.Error = &RoundError{Code: code, Message: msg, Push: ep.MessageID}
	return Outcome{Status: status, Iteration: iteration}
}

// tag is the part of push ids that names the round: "instant" on /instant,
// "iter_<n>" on /continue.
func (r *Run) tag() string {
	if r.resumed {
		return "iter_" + strconv.Itoa(r.iteration)
	}
	return "instant"
}

// messageID is msg_<uuid>_<tag>_<suffix>, the standard's producer format.
func (r *Run) messageID(suffix string) string {
	return "msg_" + push.NewUUID() + "_" + r.tag() + "_" + suffix
}

func (r *Run) common(suffix string) builders.Common {
	metadata := r.pres.Metadata
	if k := push.JSONKind(metadata); k == 0 || k == 'n' {
		metadata = json.RawMessage("{}")
	}
	return builders.Common{MessageType: push.TypeInstant, Source: push.SourceInstant, MessageID: r.messageID(suffix),
		SessionID: r.sessionID, MessageSubtype: r.pres.MessageSubtype, Metadata: metadata}
}

func (r *Run) title() string {
	if r.pres.ContactName == "" {
		return ""
	}
	return builders.FromContactTitle(r.pres.ContactName)
}

// errorPush builds a diagnostic push from a's code, message and details.
// Its id is msg_<uuid>_<suffix> (no round tag), as upstream's diagnostics
// are.
func (r *Run) errorPush(a builders.ErrorArgs, suffix string) *push.ErrorPush {
	a.Common = builders.Common{MessageType: push.TypeInstant, Source: push.SourceInstant,
		MessageID: "msg_" + push.NewUUID() + "_" + suffix, SessionID: r.sessionID, MessageSubtype: r.pres.MessageSubtype}
	ep, err := r.a.builder.BuildErrorPush(a)
	if err != nil {
		panic(err) // unreachable: every argument is the agent's own
	}
	return ep
}

// pushFailure is an emit error of a content or tool_request push.
type pushFailure struct {
	index int
	err   error
}

func (e *pushFailure) Error() string { return e.err.Error() }

// roundPusher turns one streamed answer into pushes as it arrives.
type roundPusher struct {
	run   *Run
	emit  Emit
	round Round

	reasoning     strings.Builder // reasoning_content so far
	think         llm.ThinkFilter
	visible       strings.Builder // the text after the think filter
	reasoningDone bool

	seg    *llm.Segmenter
	fed    int
	capped bool     // past MaxSplitInput: the rest is not segmented or pushed
	held   []string // complete sentences not known to be the last yet
	sent   int      // content and tool_request pushes delivered
	// recorded counts the round's messages recorded before it ended
	// (recordEarly).
	recorded int
}

// delta is the stream callback.
func (p *roundPusher) delta(d llm.Delta) error {
	p.reasoning.WriteString(d.ReasoningContent)
	text := p.think.Write(d.Content)
	if !p.reasoningDone && (!push.IsJSBlank(text) || len(d.ToolCalls) > 0) {
		p.pushReasoning() // the model has moved on from reasoning
	}
	return p.feed(text, false)
}

// end finishes the answer: the rest of the text, then the checks the
// standard makes on a complete answer.
func (p *roundPusher) end(resp *llm.Response) error {
	if resp.ToolCalls == nil && push.IsJSBlank(resp.Content) {
		return llm.MissingContent(200)
	}
	if err := p.feed(p.think.Flush(), true); err != nil {
		return err
	}
	p.pushReasoning()
	return nil
}

// pushReasoning pushes the round's reasoning once, before any content.
// Reasoning that shows up after content went out (a think span in the
// middle of a reply) is recorded but not pushed: the standard's order is
// reasoning first.
func (p *roundPusher) pushReasoning() {
	if p.reasoningDone {
		return
	}
	p.reasoningDone = true
	text := push.JSTrim(p.reasoning.String())
	if text == "" {
		text = p.think.Reasoning()
	}
	if text == "" {
		return
	}
	p.round.Reasoning = text
	r := p.run
	rp, warnings, err := r.a.builder.BuildReasoningPush(builders.ReasoningArgs{
		Common: r.common("reasoning"), ReasoningContent: text, Title: r.title(), ContactName: r.pres.ContactName,
		AvatarURL: r.avatar(),
	})
	if err != nil {
		panic(err) // unreachable: the text is not empty and the rest is the agent's own
	}
	r.logWarnings(warnings)
	if err := p.emit(rp); err != nil {
		r.a.log.Warn("could not deliver a reasoning push", "sessionId", r.sessionID, "err", err)
		return
	}
	p.round.ReasoningPush = rp.MessageID
}

func (r *Run) avatar() json.RawMessage {
	if r.pres.AvatarURL == nil {
		return json.RawMessage("null") // always present, as upstream sends it
	}
	return r.pres.AvatarURL
}

func (r *Run) logWarnings(warnings []builders.Warning) {
	for _, w := range warnings {
		r.a.log.Warn("avatarUrl cleared", "sessionId", r.sessionID, "warning", w.String())
	}
}

// feed segments text (end: the answer is complete) and pushes each
// sentence once it is complete and known to be the last or not.
func (p *roundPusher) feed(text string, end bool) error {
	p.visible.WriteString(text)
	if !p.capped && p.fed+len(text) > llm.MaxSplitInput {
		p.run.a.log.Warn("reply too long to push in full; the rest is only recorded", "sessionId", p.run.sessionID, "limit", llm.MaxSplitInput)
		p.capped = true
	}
	if !p.capped {
		p.fed += len(text)
		segs, err := p.seg.Write(text)
		if err != nil {
			return fmt.Errorf("segment the reply: %w", err)
		}
		p.held = append(p.held, segs...)
	}
	if !end {
		return p.release(false)
	}
	segs, err := p.seg.Flush()
	if err != nil {
		return fmt.Errorf("segment the reply: %w", err)
	}
	if len(segs) == 1 && push.IsJSBlank(segs[0]) {
		segs = nil // an answer that is only tool calls, or only a think span
	}
	p.held = append(p.held, segs...)
	return p.release(true)
}

// release pushes held sentences. Until the answer is complete, a sentence
// goes out once the next one has begun (held, or Segmenter.Begun), with
// totalMessages counting the sentences begun so far: a lower bound, so
// messageIndex < totalMessages says more follow. The sentences left at the end go out with the exact
// total, so the last push has messageIndex == totalMessages.
func (p *roundPusher) release(final bool) error {
	total := p.sent + len(p.held)
	for len(p.held) > 0 {
		index := p.sent + 1
		if !final {
			begun := p.sent + len(p.held)
			if p.seg.Begun() {
				begun++
			}
			if begun <= index {
				return nil
			}
			total = begun
		}
		if err := p.pushContent(p.held[0], index, total); err != nil {
			return err
		}
		p.held = p.held[1:]
	}
	return nil
}

func (p *roundPusher) pushContent(text string, index, total int) error {
	p.pushReasoning()
	r := p.run
	common := r.common(strconv.Itoa(index - 1))
	common.TaskID = push.Null[push.TaskID]()
	cp, warnings, err := r.a.builder.BuildContentPush(builders.ContentArgs{
		Common: common, Message: text, Title: r.title(), ContactName: r.pres.ContactName, AvatarURL: r.avatar(),
		MessageIndex: index, TotalMessages: total,
	})
	if err != nil {
		panic(err) // unreachable: 1 ≤ index ≤ total and the rest is the agent's own
	}
	r.logWarnings(warnings)
	if err := p.emitBurst(cp); err != nil {
		return &pushFailure{index: index, err: err}
	}
	p.round.ContentPushes = append(p.round.ContentPushes, cp.MessageID)
	return nil
}

// emitBurst emits a content or tool_request push and counts it.
func (p *roundPusher) emitBurst(pp push.Push) error {
	if err := p.emit(pp); err != nil {
		return err
	}
	p.sent++
	return nil
}
