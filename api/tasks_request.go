package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"amsg/llm"
	"amsg/push"
	"amsg/push/errcode"
	"amsg/scheduler"
)

// check runs named checks in order and returns the first failure: the
// standard validates field by field and answers with the first problem.
func check(checks ...func() *Error) error {
	for _, c := range checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

// errInvalidParameters is schedule-message's failure; its shared field
// checks name the field.
var errInvalidParameters = fail(errcode.InvalidParameters)

func missingParameters(missing ...string) *Error {
	return errInvalidParameters.withDetails(map[string]any{"missingFields": missing})
}

// readInto stores the member that read accepts into dst; a member read
// refuses is fail.
func readInto[T any](read func(key string) (T, bool), key string, dst *T, fail *Error) *Error {
	value, ok := read(key)
	if !ok {
		return fail
	}
	*dst = value
	return nil
}

var allowedTypes = []string{"fixed", "prompted", "auto", "instant"}

// scheduleValidator checks a POST /schedule-message body in the standard's
// order. Where amsg checks more than upstream (types of userMessage,
// completePrompt and the credentials, apiUrl, metadata, cronExpr), the
// check sits beside the upstream check of the same field.
type scheduleValidator struct {
	s   *Server
	ctx context.Context
	f   fields
	req *scheduleRequest
	now time.Time
	// immediate is the request's immediate flag, once checked.
	immediate bool
	// cronStartsItself: a cron task without a first time starts at its
	// expression's next time after now, computed once the expression and
	// zone are checked.
	cronStartsItself bool
}

// validateSchedule applies the standard's checks in its order; the first
// failure wins.
func (s *Server) validateSchedule(ctx context.Context, f fields) (scheduleRequest, error) {
	var req scheduleRequest
	v := &scheduleValidator{s: s, ctx: ctx, f: f, req: &req, now: s.now()}
	err := check(
		v.contactName,
		v.messageType,
		v.immediateFlag,
		v.sendTime,
		v.supersedes,
		v.pushSubscription,
		v.recurrence,
		v.zone,
		v.cron,
		v.maxTokens,
		v.userMessage,
		v.prompt,
		v.credRefs,
		v.aiConfig,
		v.credentials,
		v.instantContent,
		v.temperature,
		v.avatarURL,
		v.uuid,
		v.messageSubtype,
		v.splitPattern,
		v.llmExtraBody,
		v.metadata,
		v.priority,
	)
	if err != nil {
		return req, err
	}
	v.fill()
	return req, nil
}

func (v *scheduleValidator) contactName() *Error {
	name, ok := v.f.str("contactName")
	if !ok || name == "" {
		return missingParameters("contactName")
	}
	v.req.payload.ContactName = name
	return nil
}

func (v *scheduleValidator) messageType() *Error {
	mt, _ := v.f.str("messageType")
	v.req.payload.MessageType = push.MessageType(mt)
	if !v.req.payload.MessageType.Valid() {
		return fail(errcode.InvalidMessageType).withDetails(struct {
			ProvidedType json.RawMessage `json:"providedType,omitempty"`
			AllowedTypes []string        `json:"allowedTypes"`
		}{v.f["messageType"], allowedTypes})
	}
	return nil
}

func (v *scheduleValidator) immediateFlag() *Error {
	raw := string(v.f["immediate"])
	if v.f.has("immediate") && raw != "true" && raw != "false" {
		return invalidFields(errcode.ImmediateNotBoolean, "immediate")
	}
	v.immediate = raw == "true"
	if v.immediate && v.req.payload.MessageType == push.TypeInstant {
		return invalidFields(errcode.ImmediateOnInstant, "immediate")
	}
	return nil
}

func (v *scheduleValidator) sendTime() *Error {
	rec, _ := v.f.str("recurrenceType")
	v.cronStartsItself = rec == string(push.RecurrenceCron) && !v.immediate && !v.f.given("firstSendTime")
	badFormat := invalidPayload(errcode.InvalidTimestamp, map[string]any{"field": "firstSendTime"})
	switch {
	case v.cronStartsItself:
		return nil
	case v.immediate:
		if _, ok := parseTime(v.f["firstSendTime"]); v.f.given("firstSendTime") && !ok {
			return badFormat
		}
		v.req.sendAt = v.now
		return nil
	}
	at, ok := parseTime(v.f["firstSendTime"])
	if !v.f.truthy("firstSendTime") || !ok {
		return badFormat
	}
	if !at.After(v.now) {
		return invalidPayload(errcode.TimeNotInFuture, map[string]any{"field": "firstSendTime", "reason": "must be in the future"})
	}
	v.req.sendAt = at
	return nil
}

func (v *scheduleValidator) supersedes() *Error {
	if !v.f.given("supersedesUuid") {
		return nil
	}
	sup, ok := v.f.str("supersedesUuid")
	if !ok || !anyUUID.MatchString(sup) {
		return invalidFields(errcode.SupersedesNotUUID, "supersedesUuid")
	}
	if uuid, _ := v.f.str("uuid"); v.f.truthy("uuid") && sup == uuid {
		return invalidFields(errcode.SupersedesItself, "supersedesUuid")
	}
	v.req.supersedesUUID = sup
	return nil
}

// pushSubscription: clients of the older generation send their
// subscription with every task; amsg keeps it as one of the user's devices
// instead of refusing.
func (v *scheduleValidator) pushSubscription() *Error {
	if !v.f.given("pushSubscription") {
		return nil
	}
	if sub, ok := subscriptionShape(v.f["pushSubscription"]); !ok || v.s.checkSubscription(v.ctx, sub, "pushSubscription.") != nil {
		return fail(errcode.InvalidSubscription).
			withDetails(map[string]any{"invalidFields": []string{"pushSubscription"}})
	}
	v.req.subscription = v.f["pushSubscription"]
	return nil
}

func (v *scheduleValidator) recurrence() *Error {
	rec, ok := v.f.recurrence()
	if !ok {
		return invalidFields(errcode.InvalidParameters, "recurrenceType")
	}
	v.req.payload.RecurrenceType = cmp.Or(rec, push.RecurrenceNone)
	return nil
}

func (v *scheduleValidator) zone() *Error {
	if !v.f.given("tzId") {
		return nil
	}
	tz, ok := v.f.str("tzId")
	if !ok || !validZone(tz) {
		return invalidFields(errcode.InvalidTzID, "tzId")
	}
	v.req.payload.TzID = &tz
	return nil
}

func (v *scheduleValidator) cron() *Error {
	p := &v.req.payload
	if err := checkCronExpr(v.f, errcode.InvalidParameters); err != nil {
		return err
	}
	p.CronExpr, _ = v.f.str("cronExpr")
	if p.RecurrenceType == push.RecurrenceCron && p.CronExpr == "" {
		return invalidFields(errcode.CronRequired, "cronExpr")
	}
	if !v.cronStartsItself {
		return nil
	}
	var tz string
	if p.TzID != nil {
		tz = *p.TzID
	}
	r, err := scheduler.ParseRecurrence(push.RecurrenceCron, tz, p.CronExpr)
	if err != nil {
		return invalidFields(errcode.CronInvalid, "cronExpr")
	}
	v.req.sendAt, _ = r.NextAfter(v.now, v.now)
	return nil
}

func (v *scheduleValidator) maxTokens() *Error {
	n, err := checkMaxTokens(v.f, errcode.InvalidParameters)
	v.req.payload.MaxTokens = n
	return err
}

func (v *scheduleValidator) userMessage() *Error {
	p := &v.req.payload
	if v.f.given("userMessage") {
		if p.UserMessage = v.f.stringPtr("userMessage"); p.UserMessage == nil {
			return invalidFields(errcode.InvalidParameters, "userMessage (must be a string)")
		}
	}
	if p.MessageType == push.TypeFixed && !v.f.truthy("userMessage") {
		return missingParameters("userMessage (required for fixed type)")
	}
	return nil
}

func (v *scheduleValidator) prompt() *Error { return checkPrompt(v.f, errcode.InvalidParameters) }

// hasPrompt is the standard's test for an AI task's prompt.
func (v *scheduleValidator) hasPrompt() bool {
	return (v.f.given("completePrompt") && string(v.f["completePrompt"]) != `""`) || v.f.given("messages")
}

// aiConfig: prompted and auto tasks need a prompt and the credentials.
func (v *scheduleValidator) aiConfig() *Error {
	if mt := v.req.payload.MessageType; mt != push.TypePrompted && mt != push.TypeAuto {
		return nil
	}
	var missing []string
	if !v.hasPrompt() {
		missing = append(missing, "completePrompt or messages")
	}
	for _, k := range credentialKeys {
		if !v.f.truthy(k) && !v.chatCredRef() {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return missingParameters(missing...)
	}
	return nil
}

func (v *scheduleValidator) credentials() *Error {
	return checkCredentials(v.f, errcode.InvalidParameters)
}

// instantContent: an instant task does not recur and needs a message or a
// complete AI configuration.
func (v *scheduleValidator) instantContent() *Error {
	if v.req.payload.MessageType != push.TypeInstant {
		return nil
	}
	if v.f.truthy("recurrenceType") && v.req.payload.RecurrenceType != push.RecurrenceNone {
		return invalidFields(errcode.InstantRecurrence, `recurrenceType (must be "none" for instant type)`)
	}
	aiConfig := v.hasPrompt() && (v.chatCredRef() || v.f.truthy("apiUrl") && v.f.truthy("apiKey") && v.f.truthy("primaryModel"))
	if !aiConfig && !v.f.truthy("userMessage") {
		return fail(errcode.InstantNoContent).
			withDetails(map[string]any{"missingFields": []string{"userMessage or ((completePrompt | messages) + apiUrl + apiKey + primaryModel)"}})
	}
	return nil
}

func (v *scheduleValidator) temperature() *Error {
	return readInto(v.f.optionalNumber, "temperature", &v.req.payload.Temperature,
		invalidFields(errcode.InvalidParameters, "temperature (must be a finite number)"))
}

func (v *scheduleValidator) avatarURL() *Error {
	v.req.payload.AvatarURL = v.s.avatarURL(v.f)
	return nil
}

func (v *scheduleValidator) uuid() *Error {
	uuid, _ := v.f.str("uuid")
	if !v.f.truthy("uuid") {
		v.req.uuid = push.NewUUID()
		return nil
	}
	if !anyUUID.MatchString(uuid) {
		return invalidFields(errcode.InvalidParameters, "uuid (invalid UUID format)")
	}
	v.req.uuid = uuid
	return nil
}

func (v *scheduleValidator) messageSubtype() *Error {
	sub, ok := v.f.optionalString("messageSubtype")
	if !ok {
		return invalidFields(errcode.InvalidParameters, "messageSubtype")
	}
	v.req.payload.MessageSubtype = cmp.Or(sub, push.DefaultSubtype)
	return nil
}

func (v *scheduleValidator) splitPattern() *Error {
	if err := llm.ValidateSplitPattern(v.f["splitPattern"]); err != nil {
		return invalidFields(errcode.SplitPatternInvalid.With(err.Error()), "splitPattern")
	}
	return nil
}

func (v *scheduleValidator) llmExtraBody() *Error {
	if v.f.given("llmExtraBody") && push.JSONKind(v.f["llmExtraBody"]) != '{' {
		return invalidFields(errcode.ExtraBodyNotObject, "llmExtraBody")
	}
	return nil
}

func (v *scheduleValidator) metadata() *Error { return checkMetadata(v.f, errcode.InvalidParameters) }

// priority is amsg's: "critical" passes the user's quiet hours and daily
// limit (scheduler/quiet.go); absent, null or "normal" does not.
func (v *scheduleValidator) priority() *Error {
	p, err := decodePriority(v.f["priority"])
	v.req.payload.Priority = p
	return err
}

// fill copies the checked members the checks did not set into the payload.
func (v *scheduleValidator) fill() {
	p, f := &v.req.payload, v.f
	p.FirstSendTime = push.FormatTimestamp(v.req.sendAt)
	if f.truthy("completePrompt") {
		p.CompletePrompt = f.stringPtr("completePrompt")
	}
	p.Messages = f.raw("messages")
	for k, dst := range map[string]**string{"apiUrl": &p.APIURL, "apiKey": &p.APIKey, "primaryModel": &p.PrimaryModel} {
		if f.truthy(k) {
			*dst = f.stringPtr(k)
		}
	}
	if p.UserMessage != nil && *p.UserMessage == "" {
		p.UserMessage = nil // stored as `userMessage || null`
	}
	p.SplitPattern = f.raw("splitPattern")
	p.LLMExtraBody = f.raw("llmExtraBody")
	p.Metadata = f.raw("metadata")
}

// updateValidator checks an update-message patch in the standard's order.
// An invalid avatarUrl is dropped from the patch (the stored one stays) and
// from updatedFields.
type updateValidator struct {
	s    *Server
	f    *updateFields
	next time.Time // the new send time, zero when unchanged
}

// validateUpdate checks the patch and returns the new time, zero when
// unchanged.
func (s *Server) validateUpdate(f *updateFields) (time.Time, error) {
	v := &updateValidator{s: s, f: f}
	err := check(
		v.nextSendAt,
		v.contactName,
		v.recurrence,
		v.zone,
		v.cron,
		v.maxTokens,
		v.oneKindOfPrompt,
		v.prompt,
		v.temperature,
		v.splitPattern,
		v.avatarURL,
		v.pushSubscription,
		v.userMessage,
		v.credentials,
		v.metadata,
		v.messageSubtype,
		v.llmExtraBody,
		v.priority,
	)
	return v.next, err
}

// priority: "normal", "critical" or null (normal).
func (v *updateValidator) priority() *Error {
	_, err := decodePriority(v.f.fields["priority"])
	return err
}

// invalidUpdate is the update's failure naming fields.
func invalidUpdate(m *errcode.Message, invalid ...string) *Error {
	return invalidFields(m.Under(errcode.InvalidUpdateData), invalid...)
}

func (v *updateValidator) nextSendAt() *Error {
	if !v.f.truthy("nextSendAt") {
		return nil
	}
	t, ok := parseTime(v.f.fields["nextSendAt"])
	if !ok {
		return invalidUpdate(errcode.InvalidUpdateData, "nextSendAt")
	}
	v.next = t
	return nil
}

func (v *updateValidator) contactName() *Error {
	if name, ok := v.f.str("contactName"); v.f.has("contactName") && (!ok || strings.TrimSpace(name) == "") {
		return invalidUpdate(errcode.UpdateContactNameBlank, "contactName")
	}
	return nil
}

func (v *updateValidator) recurrence() *Error {
	if _, ok := v.f.recurrence(); !ok {
		return invalidUpdate(errcode.InvalidUpdateData, "recurrenceType")
	}
	return nil
}

func (v *updateValidator) zone() *Error {
	if tz, ok := v.f.str("tzId"); v.f.given("tzId") && (!ok || !validZone(tz)) {
		return invalidUpdate(errcode.UpdateTzIDInvalid, "tzId")
	}
	return nil
}

func (v *updateValidator) cron() *Error { return checkCronExpr(v.f.fields, errcode.InvalidUpdateData) }

func (v *updateValidator) maxTokens() *Error {
	_, err := checkMaxTokens(v.f.fields, errcode.InvalidUpdateData)
	return err
}

func (v *updateValidator) oneKindOfPrompt() *Error {
	if v.f.truthy("completePrompt") && v.f.given("messages") {
		return invalidUpdate(errcode.UpdatePromptAndMessages, "completePrompt", "messages")
	}
	return nil
}

func (v *updateValidator) prompt() *Error { return checkPrompt(v.f.fields, errcode.InvalidUpdateData) }

func (v *updateValidator) temperature() *Error {
	if _, ok := v.f.optionalNumber("temperature"); !ok {
		return invalidUpdate(errcode.InvalidUpdateData, "temperature")
	}
	return nil
}

func (v *updateValidator) splitPattern() *Error {
	if !v.f.has("splitPattern") {
		return nil
	}
	if err := llm.ValidateSplitPattern(v.f.fields["splitPattern"]); err != nil {
		return invalidUpdate(errcode.SplitPatternInvalid.With(err.Error()), "splitPattern")
	}
	return nil
}

func (v *updateValidator) avatarURL() *Error {
	if v.f.given("avatarUrl") && v.s.avatarURL(v.f.fields) == nil {
		delete(v.f.fields, "avatarUrl")
		v.f.keys = slices.DeleteFunc(v.f.keys, func(k string) bool { return k == "avatarUrl" })
	}
	return nil
}

func (v *updateValidator) pushSubscription() *Error {
	if v.f.has("pushSubscription") {
		return fail(errcode.SubscriptionNotAccepted).
			withDetails(map[string]any{"invalidFields": []string{"pushSubscription"}})
	}
	return nil
}

// userMessage: amsg checks the types upstream stores blindly: the payload
// it fires from must hold strings and a metadata object.
func (v *updateValidator) userMessage() *Error {
	if v.f.truthy("userMessage") && v.f.stringPtr("userMessage") == nil {
		return invalidUpdate(errcode.InvalidUpdateData, "userMessage")
	}
	return nil
}

func (v *updateValidator) credentials() *Error {
	return checkCredentials(v.f.fields, errcode.InvalidUpdateData)
}

// messageSubtype: a string, or null for the default.
func (v *updateValidator) messageSubtype() *Error {
	if _, ok := v.f.optionalString("messageSubtype"); !ok {
		return invalidUpdate(errcode.InvalidUpdateData, "messageSubtype")
	}
	return nil
}

// llmExtraBody: an object, or null for none.
func (v *updateValidator) llmExtraBody() *Error {
	if v.f.given("llmExtraBody") && push.JSONKind(v.f.fields["llmExtraBody"]) != '{' {
		return invalidUpdate(errcode.ExtraBodyNotObject, "llmExtraBody")
	}
	return nil
}

// metadata is merged only when truthy, so only then is it checked.
func (v *updateValidator) metadata() *Error {
	if !v.f.truthy("metadata") {
		return nil
	}
	return checkMetadata(v.f.fields, errcode.InvalidUpdateData)
}

func validZone(name string) bool {
	_, err := scheduler.LoadZone(name)
	return err == nil
}

// The checks below are shared by schedule, update and (metadata) instant.
// Each base error carries its endpoint's status, code and generic message.

// checkCronExpr checks a cronExpr member: a valid five-field expression, and
// not beside a recurrenceType other than cron. null is allowed (on update it
// clears the expression).
func checkCronExpr(f fields, base *errcode.Message) *Error {
	if !f.given("cronExpr") {
		return nil
	}
	expr, ok := f.str("cronExpr")
	if _, err := scheduler.ParseCron(expr); !ok || err != nil {
		return invalidFields(errcode.CronInvalid.Under(base), "cronExpr")
	}
	if rec, _ := f.str("recurrenceType"); f.truthy("recurrenceType") && push.Recurrence(rec) != push.RecurrenceCron {
		return invalidFields(errcode.CronNotCron.Under(base), "cronExpr")
	}
	return nil
}

// checkMaxTokens reads an optional maxTokens: absent and null are nil,
// anything else must be a positive integer.
func checkMaxTokens(f fields, base *errcode.Message) (*int, *Error) {
	if !f.given("maxTokens") {
		return nil, nil
	}
	n, ok := f.positiveInt("maxTokens")
	if !ok {
		return nil, invalidFields(base, "maxTokens")
	}
	return &n, nil
}

// checkPrompt applies the prompt rules shared by schedule and update:
// completePrompt and messages exclude each other, messages has the
// standard's shape, and completePrompt is a string.
func checkPrompt(f fields, base *errcode.Message) *Error {
	if f.truthy("completePrompt") && f.given("messages") {
		return invalidFields(errcode.PromptAndMessages.Under(base), "completePrompt", "messages")
	}
	if f.given("messages") {
		var bad *llm.MessagesError
		if errors.As(llm.ValidateMessages(f["messages"]), &bad) {
			return invalidFields(base.Quoting(bad.English()), "messages")
		}
	}
	if f.truthy("completePrompt") && f.stringPtr("completePrompt") == nil {
		return invalidFields(errcode.InvalidParameters.Under(base), "completePrompt")
	}
	return nil
}

var credentialKeys = []string{"apiUrl", "apiKey", "primaryModel"}

// checkCredentials checks what upstream only checks for truthiness: apiUrl,
// apiKey and primaryModel, when given, are strings, and apiUrl normalizes to
// a chat-completions URL, so a typo fails the request and not every fire.
// base's message is the one for a value that is not a string.
func checkCredentials(f fields, base *errcode.Message) *Error {
	for _, k := range credentialKeys {
		if f.truthy(k) && f.stringPtr(k) == nil {
			return invalidFields(base, k)
		}
	}
	if u, ok := f.str("apiUrl"); ok && u != "" {
		if _, err := llm.NormalizeAPIURL(u); err != nil {
			return invalidFields(base.Quoting(err.Error()), "apiUrl")
		}
	}
	return nil
}

// checkMetadata: upstream stores any metadata; the pushes it is copied into
// must carry an object, so anything else is refused now rather than at
// every fire.
func checkMetadata(f fields, base *errcode.Message) *Error {
	if f.given("metadata") && push.JSONKind(f["metadata"]) != '{' {
		return invalidFields(errcode.MetadataNotObject.Under(base), "metadata")
	}
	return nil
}
