package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"amsg/builders"
	"amsg/llm"
	"amsg/loop"
	"amsg/push"
	"amsg/push/errcode"
	"amsg/push/notifytext"
)

// instantRequest is a validated /instant or /continue body.
type instantRequest struct {
	contactName    string
	completePrompt string
	messages       json.RawMessage // nil when completePrompt is used
	apiURL         string
	apiKey         string
	primaryModel   string
	maxTokens      int
	temperature    *float64
	// subscription is the request's pushSubscription; nil when absent
	// (allowed when the request names a user).
	subscription   *push.Subscription
	avatarURL      json.RawMessage // soft-cleared: nil (absent), null or a kept string
	messageSubtype string
	sessionID      string // "" when absent
	iteration      int    // -1 when absent
	metadata       json.RawMessage
	llmExtraBody   json.RawMessage
	tools          json.RawMessage // null and absent are nil
	toolChoice     json.RawMessage
	tokenBudget    int64
	approvals      loop.Approvals
}

// call is the LLM call the request describes.
func (q *instantRequest) call() llm.Request {
	return llm.Request{APIURL: q.apiURL, APIKey: q.apiKey, Model: q.primaryModel, Messages: q.messages,
		Prompt: q.completePrompt, Temperature: q.temperature, MaxTokens: q.maxTokens,
		Tools: q.tools, ToolChoice: q.toolChoice, ExtraBody: q.llmExtraBody}
}

// presentation is how the round's pushes present themselves; the texts amsg
// writes itself follow the request's Accept-Language.
func (q *instantRequest) presentation(r *http.Request) loop.Presentation {
	return loop.Presentation{ContactName: q.contactName, AvatarURL: q.avatarURL, MessageSubtype: q.messageSubtype, Metadata: q.metadata,
		Language: notifytext.Language(r.Header.Get("Accept-Language"))}
}

// The split fields the standard removed in 0.8.0.
var removedSplitFields = []string{"splitPattern", "reasoningSplitPattern", "errorSplitPattern"}

// errBodyNotJSON is step 8 of the standard's pipeline.
var errBodyNotJSON = fail(errcode.BodyNotJSON)

// bodyFields parses a plaintext body into its members, absent and null kept
// apart. A repeated key keeps its last value, as JSON.parse does.
func bodyFields(body []byte) (fields, error) {
	if !json.Valid(body) {
		return nil, errBodyNotJSON
	}
	if push.JSONKind(body) != '{' {
		return nil, invalidPayload(errcode.PayloadNotObject, nil)
	}
	return decodeFields(body), nil
}

// nonBlank returns a string member that is not blank after JavaScript's
// trim, the standard's "required".
func (f fields) nonBlank(key string) (string, bool) {
	s, ok := f.str(key)
	return s, ok && !push.IsJSBlank(s)
}

// integer returns an integral numeric member within JavaScript's safe
// integers (1.0 counts, as Number.isInteger says).
func (f fields) integer(key string) (int64, bool) {
	n, ok := f.number(key)
	if !ok || n != math.Trunc(n) || math.Abs(n) > 1<<53 {
		return 0, false
	}
	return int64(n), true
}

// invalidPayload is m with details.
func invalidPayload(m *errcode.Message, details any) *Error {
	return fail(m).withDetails(details)
}

// invalidFields is m naming the fields that are wrong.
func invalidFields(m *errcode.Message, names ...string) *Error {
	return invalidPayload(m, map[string]any{"invalidFields": names})
}

// missingFields is m naming the fields that are missing.
func missingFields(m *errcode.Message, names ...string) *Error {
	return invalidPayload(m, map[string]any{"missingFields": names})
}

// requestValidator runs the standard's checks in order; the first failure
// is the answer.
type requestValidator struct {
	f        fields
	q        *instantRequest
	haveUser bool
	maxIter  int
	// defaultModel lets a request give none of the credentials: the
	// operator's model answers it.
	defaultModel bool
	log          func(warning builders.Warning)
}

// decodeInstant validates an /instant body (validateInstantPayload on the
// standard's legacy path, which amsg always takes: it has no onLLMOutput
// hook, so completePrompt is accepted with or without tools), then amsg's
// own fields.
func decodeInstant(f fields, haveUser bool, maxIter int, defaultModel bool, warn func(builders.Warning)) (*instantRequest, error) {
	v := &requestValidator{f: f, q: &instantRequest{iteration: -1}, haveUser: haveUser, maxIter: maxIter, defaultModel: defaultModel, log: warn}
	err := check(
		v.forbidden("firstSendTime", errcode.InstantFirstSendTime),
		v.onlyValue("recurrenceType", "none", errcode.InstantRecurrenceType),
		v.onlyValue("messageType", "instant", errcode.InstantMessageType),
		v.contactName,
		v.promptOrMessages,
		v.temperature,
		v.credentials,
		v.maxTokens,
		v.pushSubscription,
		v.avatarURL,
		v.messageSubtype,
		v.splitFields,
		v.shared,
		v.tools,
		v.tokenBudget,
		v.approvalTools,
		v.approvalTimeout,
	)
	return v.q, err
}

// decodeContinue validates a /continue body in validateContinuePayload's
// order. Unlike upstream, messages may hold only the tool results.
func decodeContinue(f fields, haveUser bool, maxIter int, defaultModel bool, warn func(builders.Warning)) (*instantRequest, error) {
	v := &requestValidator{f: f, q: &instantRequest{iteration: -1}, haveUser: haveUser, maxIter: maxIter, defaultModel: defaultModel, log: warn}
	err := check(
		func() *Error {
			if _, ok := f.nonBlank("sessionId"); !ok {
				return missingFields(errcode.SessionIDRequired, "sessionId")
			}
			return nil
		},
		func() *Error {
			if f.has("completePrompt") {
				return invalidFields(errcode.CompletePromptOnHookPath, "completePrompt")
			}
			if !f.has("messages") {
				return missingFields(errcode.MessagesRequired, "messages")
			}
			return nil
		},
		v.messages,
		v.contactName,
		v.credentials,
		v.maxTokens,
		v.temperature,
		v.pushSubscription,
		v.avatarURL,
		v.splitFields,
		v.shared,
		v.tools,
	)
	if s, ok := f.str("messageSubtype"); ok {
		v.q.messageSubtype = s // not checked on /continue: anything else is the default
	}
	return v.q, err
}

func (v *requestValidator) forbidden(key string, m *errcode.Message) func() *Error {
	return func() *Error {
		if v.f.has(key) {
			return invalidFields(m, key)
		}
		return nil
	}
}

func (v *requestValidator) onlyValue(key, allowed string, m *errcode.Message) func() *Error {
	return func() *Error {
		if s, ok := v.f.str(key); v.f.has(key) && (!ok || s != allowed) {
			return invalidFields(m, key)
		}
		return nil
	}
}

func (v *requestValidator) contactName() *Error {
	return readInto(v.f.nonBlank, "contactName", &v.q.contactName, missingFields(errcode.ContactNameRequired, "contactName"))
}

func (v *requestValidator) promptOrMessages() *Error {
	hasPrompt, hasMessages := v.f.has("completePrompt"), v.f.has("messages")
	switch {
	case hasPrompt && hasMessages:
		return invalidFields(errcode.PromptAndMessages, "completePrompt", "messages")
	case !hasPrompt && !hasMessages:
		return missingFields(errcode.PromptOrMessages, "completePrompt", "messages")
	case hasMessages:
		return v.messages()
	}
	return readInto(v.f.nonBlank, "completePrompt", &v.q.completePrompt, invalidFields(errcode.CompletePromptBlank, "completePrompt"))
}

func (v *requestValidator) messages() *Error {
	var bad *llm.MessagesError
	if errors.As(llm.ValidateMessages(v.f["messages"]), &bad) {
		return invalidFields(errcode.MessagesShape.With(bad.Chinese()), "messages")
	}
	v.q.messages = v.f["messages"]
	return nil
}

func (v *requestValidator) temperature() *Error {
	return readInto(v.f.optionalNumber, "temperature", &v.q.temperature, invalidFields(errcode.TemperatureNotFinite, "temperature"))
}

func (v *requestValidator) credentials() *Error {
	if v.defaultModel && !v.f.has("apiUrl") && !v.f.has("apiKey") && !v.f.has("primaryModel") {
		return nil
	}
	for _, c := range []struct {
		key string
		dst *string
	}{{"apiUrl", &v.q.apiURL}, {"apiKey", &v.q.apiKey}, {"primaryModel", &v.q.primaryModel}} {
		s, ok := v.f.nonBlank(c.key)
		if !ok {
			return missingFields(errcode.FieldRequired.With(c.key), c.key)
		}
		*c.dst = s
	}
	return nil
}

func (v *requestValidator) maxTokens() *Error {
	n, err := v.positiveInteger("maxTokens", math.MaxInt32)
	v.q.maxTokens = int(n)
	return err
}

// positiveInteger reads an optional member (absent and null are 0) that
// must otherwise be an integer in 1..limit.
func (v *requestValidator) positiveInteger(key string, limit int64) (int64, *Error) {
	if !v.f.given(key) {
		return 0, nil
	}
	n, ok := v.f.integer(key)
	if !ok || n <= 0 || n > limit {
		return 0, invalidFields(errcode.FieldNotPositiveInt.With(key), key)
	}
	return n, nil
}

// pushSubscription needs an object with a string endpoint, as upstream; it
// may be left out when the request names a user, whose devices receive the
// pushes. Its endpoint and keys are checked after the body is valid.
func (v *requestValidator) pushSubscription() *Error {
	if !v.f.given("pushSubscription") && v.haveUser {
		return nil
	}
	raw := v.f["pushSubscription"]
	sub := decodeFields(raw)
	endpoint, ok := sub.str("endpoint")
	if push.JSONKind(raw) != '{' || !ok {
		return missingFields(errcode.SubscriptionShape, "pushSubscription.endpoint")
	}
	v.q.subscription = &push.Subscription{Endpoint: endpoint}
	// Keys of the wrong type stay empty; the key check reports them.
	_ = json.Unmarshal(sub["keys"], &v.q.subscription.Keys)
	return nil
}

func (v *requestValidator) avatarURL() *Error {
	avatar, warning := builders.CheckAvatarURL(v.f["avatarUrl"])
	if warning != nil {
		v.log(*warning)
	}
	v.q.avatarURL = avatar
	return nil
}

func (v *requestValidator) messageSubtype() *Error {
	return readInto(v.f.optionalString, "messageSubtype", &v.q.messageSubtype, invalidFields(errcode.MessageSubtypeNotString, "messageSubtype"))
}

func (v *requestValidator) splitFields() *Error {
	for _, key := range removedSplitFields {
		if v.f.has(key) {
			return invalidFields(errcode.SplitFieldRemoved.With(key), key)
		}
	}
	return nil
}

// shared are the checks /instant and /continue end with: sessionId,
// charId, iteration, metadata; llmExtraBody is passed on unchecked.
func (v *requestValidator) shared() *Error {
	for _, key := range []string{"sessionId", "charId"} {
		s, ok := v.f.nonBlank(key)
		if v.f.has(key) && !ok {
			return invalidFields(errcode.FieldBlank.With(key), key)
		}
		if key == "sessionId" {
			v.q.sessionID = s
		}
	}
	if v.f.has("iteration") {
		n, ok := v.f.integer("iteration")
		if !ok || n < 0 || n >= int64(v.maxIter) {
			return invalidFields(errcode.IterationOutOfRange.With(v.maxIter-1), "iteration")
		}
		v.q.iteration = int(n)
	}
	if err := checkMetadata(v.f, errcode.InvalidPayloadFormat); err != nil {
		return err
	}
	v.q.metadata = v.f.raw("metadata")
	v.q.llmExtraBody = v.f["llmExtraBody"]
	return nil
}

// tools (amsg's own: forwarded to the LLM, with toolChoice) must be an
// array when given.
func (v *requestValidator) tools() *Error {
	if !v.f.given("tools") {
		return nil
	}
	if v.f["tools"][0] != '[' { // given: neither absent nor null, so not empty
		return invalidFields(errcode.ToolsNotArray, "tools")
	}
	v.q.tools = v.f["tools"]
	if v.f.given("toolChoice") {
		v.q.toolChoice = v.f["toolChoice"]
	}
	return nil
}

// tokenBudget (amsg's own) bounds the session's tokens.
func (v *requestValidator) tokenBudget() *Error {
	var err *Error
	v.q.tokenBudget, err = v.positiveInteger("tokenBudget", 1<<53)
	return err
}

// MaxApprovalTools bounds approvalTools.
const MaxApprovalTools = 32

// approvalTools (amsg's own, issue 21) names tools of `tools` whose calls
// wait for the person's decision. Interrupts belong to a user: the request
// must name one.
func (v *requestValidator) approvalTools() *Error {
	if !v.f.given("approvalTools") {
		return nil
	}
	var names []string
	if err := json.Unmarshal(v.f["approvalTools"], &names); err != nil || len(names) == 0 || len(names) > MaxApprovalTools {
		return invalidApprovalTools(fmt.Sprintf("approvalTools must be an array of 1..%d tool names", MaxApprovalTools))
	}
	if !v.haveUser {
		return invalidApprovalTools("approvalTools need X-User-Id: an approval goes to the user's devices")
	}
	declared := declaredTools(v.q.tools)
	for _, name := range names {
		if !slices.Contains(declared, name) {
			return invalidApprovalTools(fmt.Sprintf("approvalTools names %q, which is no function in tools", name))
		}
	}
	v.q.approvals.Tools = slices.Compact(slices.Sorted(slices.Values(names)))
	return nil
}

func invalidApprovalTools(reason string) *Error {
	return fail(errcode.InvalidApprovalTools).
		withDetails(map[string]any{"invalidFields": []string{"approvalTools"}, "reason": reason})
}

// declaredTools are the function names of a tools array.
func declaredTools(tools json.RawMessage) []string {
	var list []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	_ = json.Unmarshal(tools, &list) // an array, checked by tools; odd elements name nothing
	names := make([]string, 0, len(list))
	for _, t := range list {
		names = append(names, t.Function.Name)
	}
	return names
}

// approvalTimeout (approvalTimeoutSeconds) is how long an approval waits.
func (v *requestValidator) approvalTimeout() *Error {
	if !v.f.given("approvalTimeoutSeconds") {
		return nil
	}
	lo, hi := int64(loop.MinInterruptTimeout/time.Second), int64(loop.MaxInterruptTimeout/time.Second)
	n, ok := v.f.integer("approvalTimeoutSeconds")
	if !ok || n < lo || n > hi {
		return fail(errcode.InvalidApprovalTimeout).
			withDetails(map[string]any{"invalidFields": []string{"approvalTimeoutSeconds"}, "min": lo, "max": hi})
	}
	v.q.approvals.TimeoutSeconds = n
	return nil
}
