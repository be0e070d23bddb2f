// Package builders validates and stamps pushes: a Builder's
// BuildContentPush, BuildReasoningPush, BuildToolRequestPush and
// BuildErrorPush turn arguments into push values ready to encode.
//
// They are stricter than the upstream JavaScript builders, which only check
// that required fields are present, yet accept everything upstream producers
// emit (including the 1/1 index pair of a single content push):
//
//   - messageType and source come from their enums and pair (instant with
//     instant; fixed, prompted and auto with scheduled);
//   - messageIndex and totalMessages come together or not at all, with
//     1 ≤ messageIndex ≤ totalMessages; a reasoning push has neither;
//   - metadata is a JSON object or null and is passed through untouched;
//   - the notification directive is validated as the standard says, its
//     unknown members kept;
//   - an avatarUrl the standard would refuse is cleared to null with a
//     Warning, never an error (see CheckAvatarURL).
//
// Defaults: messageSubtype "chat", timestamp now, messageId "msg_<uuid>".
// A Builder carries the clock and the id source, so tests and components
// with an injected clock control both. A rule broken is an *Error naming the
// push kind, the field and the rule; only the first rule broken, in wire
// order, is reported.
package builders

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"amsg/push"
)

// Builder builds pushes with an injectable clock and id source. The zero
// Builder uses time.Now and push.NewMessageID.
type Builder struct {
	// Now stamps timestamp when the arguments carry none.
	Now func() time.Time
	// NewMessageID makes the messageId of a push built without one.
	NewMessageID func() string
	// PageURL is the origin the companion page is served at, such as
	// https://amsg.example.com. Only with it are content, tool_request and
	// error pushes Declarative Web Push messages (declarative.go): Safari
	// reads notification.navigate as an absolute URL and refuses the push
	// otherwise.
	PageURL string
}

// Common holds the arguments every builder takes.
type Common struct {
	// MessageType and Source are required and must pair.
	MessageType push.MessageType
	Source      push.Source
	// MessageID is generated when empty. Give it when the push must keep its
	// id across retries or carry a producer's format (msg_<uuid>_instant_0).
	MessageID string
	// SessionID is required: it ties the pushes of one round or loop.
	SessionID string
	// Timestamp is stamped from the Builder's clock when zero.
	Timestamp time.Time
	// MessageSubtype is the caller's business namespace; push.DefaultSubtype
	// when empty.
	MessageSubtype string
	// Metadata is the caller's: a JSON object or null, nil for absent. The
	// push carries these very bytes.
	Metadata json.RawMessage
	// Notification is the display directive; nil for absent. The push
	// shares it.
	Notification *push.Notification
	// TaskIdentity is the scheduled occurrence the push belongs to; the
	// scheduler fills it. Instant producers leave it empty, or set a null
	// TaskID as the instant ContentPush does.
	push.TaskIdentity
}

// Rule names a validation rule. Rules are stable: callers may branch on them.
type Rule string

// Rules.
const (
	RuleRequired Rule = "required" // a required field is absent or empty
	RuleEnum     Rule = "enum"     // a value outside its enumeration
	RulePairing  Rule = "pairing"  // messageType and source do not pair
	RuleTogether Rule = "together" // messageIndex and totalMessages not given together
	RuleRange    Rule = "range"    // a number or time out of its range
	RuleType     Rule = "type"     // a value of the wrong JSON type, or null where the standard refuses it
	RuleJSON     Rule = "json"     // raw JSON that does not parse, or members that cannot be written

	// Rules of avatarUrl; breaking one clears it with a Warning.
	RuleDataURI Rule = "data-uri" // a data: URI
	RuleTooLong Rule = "too-long" // over AvatarURLMaxLength UTF-16 code units
	RuleURL     Rule = "url"      // not an absolute https URL
)

// Error reports an argument that breaks a rule.
type Error struct {
	Kind  push.Kind // the push being built
	Field string    // the wire name: "messageIndex", "notification.show"
	Rule  Rule
	// Detail says what is wrong, as a phrase that follows the field name.
	Detail string
}

func (e *Error) Error() string {
	return fmt.Sprintf("builders: %s push: %s %s (rule %s)", e.Kind, e.Field, e.Detail, e.Rule)
}

// Warning reports an argument the builder corrected instead of refusing.
type Warning struct {
	Field  string
	Rule   Rule
	Detail string
}

func (w Warning) String() string {
	return fmt.Sprintf("%s cleared to null: %s (rule %s)", w.Field, w.Detail, w.Rule)
}

// validator keeps the first rule broken, so checks read as a flat list.
type validator struct {
	kind push.Kind
	err  *Error
}

// check records a failure of field unless ok, and returns ok.
func (v *validator) check(ok bool, field string, rule Rule, format string, args ...any) bool {
	if !ok && v.err == nil {
		v.err = &Error{Kind: v.kind, Field: field, Rule: rule, Detail: fmt.Sprintf(format, args...)}
	}
	return ok
}

func (v *validator) result() error {
	if v.err == nil {
		return nil
	}
	return v.err
}

// head validates and stamps the members before the kind's own:
// messageType, source, messageId, sessionId, timestamp.
func (b Builder) head(v *validator, a *Common) push.Common {
	if v.check(a.MessageType != "", "messageType", RuleRequired, "is required") {
		v.check(a.MessageType.Valid(), "messageType", RuleEnum, "must be instant, fixed, prompted or auto, not %q", a.MessageType)
	}
	if v.check(a.Source != "", "source", RuleRequired, "is required") &&
		v.check(a.Source.Valid(), "source", RuleEnum, "must be instant or scheduled, not %q", a.Source) &&
		a.MessageType.Valid() {
		v.check(a.MessageType.Source() == a.Source, "source", RulePairing,
			"must be %q for messageType %q, not %q", a.MessageType.Source(), a.MessageType, a.Source)
	}
	v.check(a.SessionID != "", "sessionId", RuleRequired, "is required")

	c := push.Common{
		MessageType: a.MessageType,
		Source:      a.Source,
		MessageID:   a.MessageID,
		SessionID:   a.SessionID,
	}
	if c.MessageID == "" {
		if b.NewMessageID != nil {
			c.MessageID = b.NewMessageID()
		} else {
			c.MessageID = push.NewMessageID()
		}
	}
	at := a.Timestamp
	if at.IsZero() {
		if b.Now != nil {
			at = b.Now()
		} else {
			at = time.Now()
		}
	}
	if year := at.UTC().Year(); v.check(year >= 0 && year <= 9999, "timestamp", RuleRange, "must fall in years 0000 to 9999, not %d", year) {
		c.Timestamp = push.FormatTimestamp(at)
	}
	return c
}

// tail validates and copies the members after the kind's own: the task
// identity, metadata and notification. messageSubtype, whose position
// varies by kind, is filled here too.
func tail(v *validator, a *Common, c *push.Common) {
	subtype := a.MessageSubtype
	if subtype == "" {
		subtype = push.DefaultSubtype
	}
	c.MessageSubtype = push.Some(subtype)
	if r, ok := a.RecurrenceType.Get(); ok {
		v.check(r.Valid(), "recurrenceType", RuleEnum, "must be none, daily, weekly or cron, not %q", r)
	}
	c.TaskIdentity = a.TaskIdentity
	if a.Metadata != nil {
		kind := jsonKind(a.Metadata)
		if v.check(kind != 0, "metadata", RuleJSON, "must be valid UTF-8 JSON") {
			v.check(kind == '{' || kind == 'n', "metadata", RuleType, "must be a JSON object or null")
		}
	}
	c.Metadata = a.Metadata
	if a.Notification != nil {
		checkNotification(v, a.Notification)
	}
	c.Notification = a.Notification
}

// jsonKind returns the first byte of a valid JSON value ('{', '[', '"',
// 't', 'f', 'n', or a digit or '-'), or 0 when raw is not UTF-8 JSON.
func jsonKind(raw json.RawMessage) byte {
	if !utf8.Valid(raw) || !json.Valid(raw) {
		return 0
	}
	return push.JSONKind(raw)
}

func optionalString(s string) push.Optional[string] {
	if s == "" {
		return push.Optional[string]{}
	}
	return push.Some(s)
}
