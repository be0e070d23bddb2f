package builders_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"amsg/builders"
	"amsg/push"
)

// build runs one builder on arguments that are valid until a row changes
// them.
type build func() (push.Push, []builders.Warning, error)

func content(change func(*builders.ContentArgs)) build {
	return func() (push.Push, []builders.Warning, error) {
		a := builders.ContentArgs{Common: instant(), Message: "hi"}
		change(&a)
		p, w, err := fixed.BuildContentPush(a)
		if p == nil {
			return nil, w, err
		}
		return p, w, err
	}
}

func reasoning(change func(*builders.ReasoningArgs)) build {
	return func() (push.Push, []builders.Warning, error) {
		a := builders.ReasoningArgs{Common: instant(), ReasoningContent: "plan"}
		change(&a)
		p, w, err := fixed.BuildReasoningPush(a)
		if p == nil {
			return nil, w, err
		}
		return p, w, err
	}
}

func toolRequest(change func(*builders.ToolRequestArgs)) build {
	return func() (push.Push, []builders.Warning, error) {
		a := builders.ToolRequestArgs{Common: instant(), ToolCalls: raw(`[{"id":"a"}]`)}
		change(&a)
		p, err := fixed.BuildToolRequestPush(a)
		if p == nil {
			return nil, nil, err
		}
		return p, nil, err
	}
}

func errorPush(change func(*builders.ErrorArgs)) build {
	return func() (push.Push, []builders.Warning, error) {
		a := builders.ErrorArgs{Common: instant(), Code: "INTERNAL_ERROR"}
		change(&a)
		p, err := fixed.BuildErrorPush(a)
		if p == nil {
			return nil, nil, err
		}
		return p, nil, err
	}
}

// common applies a change of the common arguments to every kind, so a rule
// of the common fields is checked on all four builders.
func common(change func(*builders.Common)) []build {
	return []build{
		content(func(a *builders.ContentArgs) { change(&a.Common) }),
		reasoning(func(a *builders.ReasoningArgs) { change(&a.Common) }),
		toolRequest(func(a *builders.ToolRequestArgs) { change(&a.Common) }),
		errorPush(func(a *builders.ErrorArgs) { change(&a.Common) }),
	}
}

func notification(n push.Notification) []build {
	return common(func(c *builders.Common) { c.Notification = &n })
}

// TestRules has one row per rule, with cases that break it and cases at its
// edge that must pass. A rejecting row names the field and the rule; an
// accepting row says what the push then carries.
func TestRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		builds []build
		field  string        // "" when the arguments must be accepted
		rule   builders.Rule // with field
		want   string        // a substring of the encoded push, when accepted
	}{
		// messageType and source: required, from their enums, paired.
		{"messageType missing", common(func(c *builders.Common) { c.MessageType = "" }), "messageType", builders.RuleRequired, ""},
		{"messageType not in enum", common(func(c *builders.Common) { c.MessageType = "banana" }), "messageType", builders.RuleEnum, ""},
		{"source missing", common(func(c *builders.Common) { c.Source = "" }), "source", builders.RuleRequired, ""},
		{"source not in enum", common(func(c *builders.Common) { c.Source = "cron" }), "source", builders.RuleEnum, ""},
		{"instant from the scheduler", common(func(c *builders.Common) { c.Source = push.SourceScheduled }), "source", builders.RulePairing, ""},
		{"prompted from instant", common(func(c *builders.Common) { c.MessageType = push.TypePrompted }), "source", builders.RulePairing, ""},
		{"fixed from the scheduler", common(func(c *builders.Common) { c.MessageType, c.Source = push.TypeFixed, push.SourceScheduled }), "", "", `"messageType":"fixed","source":"scheduled"`},
		{"prompted from the scheduler", common(func(c *builders.Common) { c.MessageType, c.Source = push.TypePrompted, push.SourceScheduled }), "", "", `"messageType":"prompted","source":"scheduled"`},
		{"auto from the scheduler", common(func(c *builders.Common) { c.MessageType, c.Source = push.TypeAuto, push.SourceScheduled }), "", "", `"messageType":"auto","source":"scheduled"`},

		// sessionId is required; messageId is generated; timestamp in range.
		{"sessionId missing", common(func(c *builders.Common) { c.SessionID = "" }), "sessionId", builders.RuleRequired, ""},
		{"messageId generated", common(func(c *builders.Common) { c.MessageID = "" }), "", "", `"messageId":"msg_00000000-0000-4000-8000-000000000001"`},
		{"timestamp after year 9999", common(func(c *builders.Common) { c.Timestamp = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }), "timestamp", builders.RuleRange, ""},
		{"timestamp in year 9999", common(func(c *builders.Common) { c.Timestamp = time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC) }), "", "", `"timestamp":"9999-12-31T23:59:59.999Z"`},

		// messageSubtype defaults to chat, a given one is kept.
		{"messageSubtype default", common(func(c *builders.Common) {}), "", "", `"messageSubtype":"chat"`},
		{"messageSubtype given", common(func(c *builders.Common) { c.MessageSubtype = "reminder" }), "", "", `"messageSubtype":"reminder"`},

		// metadata: a JSON object or null, passed through.
		{"metadata not JSON", common(func(c *builders.Common) { c.Metadata = raw(`{"a":`) }), "metadata", builders.RuleJSON, ""},
		{"metadata not UTF-8", common(func(c *builders.Common) { c.Metadata = raw("{\"a\":\"\xff\"}") }), "metadata", builders.RuleJSON, ""},
		{"metadata an array", common(func(c *builders.Common) { c.Metadata = raw(`[1]`) }), "metadata", builders.RuleType, ""},
		{"metadata a string", common(func(c *builders.Common) { c.Metadata = raw(`"x"`) }), "metadata", builders.RuleType, ""},
		{"metadata null", common(func(c *builders.Common) { c.Metadata = raw(`null`) }), "", "", `"metadata":null`},
		{"metadata an object", common(func(c *builders.Common) { c.Metadata = raw(`{"k":[1,{"v":null}]}`) }), "", "", `"metadata":{"k":[1,{"v":null}]}`},

		// The task identity: recurrenceType from its enum.
		{"recurrenceType not in enum", common(func(c *builders.Common) { c.RecurrenceType = push.Some(push.Recurrence("monthly")) }), "recurrenceType", builders.RuleEnum, ""},
		{"task identity carried", common(func(c *builders.Common) {
			c.TaskID, c.RecurrenceType, c.OccurrenceMs = push.Some(push.StringTaskID("t")), push.Some(push.RecurrenceNone), push.Some(int64(5))
		}), "", "", `"taskId":"t","recurrenceType":"none","occurrenceMs":5`},
		{"cron recurrence (amsg's extension)", common(func(c *builders.Common) { c.RecurrenceType = push.Some(push.RecurrenceCron) }),
			"", "", `"recurrenceType":"cron"`},

		// messageIndex and totalMessages: both or neither, 1 ≤ index ≤ total.
		{"index without total", []build{content(func(a *builders.ContentArgs) { a.MessageIndex = 1 })}, "totalMessages", builders.RuleTogether, ""},
		{"total without index", []build{content(func(a *builders.ContentArgs) { a.TotalMessages = 2 })}, "messageIndex", builders.RuleTogether, ""},
		{"index below 1", []build{content(func(a *builders.ContentArgs) { a.MessageIndex, a.TotalMessages = -1, 2 })}, "messageIndex", builders.RuleRange, ""},
		{"total below 1", []build{content(func(a *builders.ContentArgs) { a.MessageIndex, a.TotalMessages = 1, -1 })}, "totalMessages", builders.RuleRange, ""},
		{"index over total", []build{content(func(a *builders.ContentArgs) { a.MessageIndex, a.TotalMessages = 3, 2 })}, "messageIndex", builders.RuleRange, ""},
		{"single push 1/1 as upstream sends it", []build{content(func(a *builders.ContentArgs) { a.MessageIndex, a.TotalMessages = 1, 1 })}, "", "", `"messageIndex":1,"totalMessages":1`},
		{"last of a burst", []build{content(func(a *builders.ContentArgs) { a.MessageIndex, a.TotalMessages = 3, 3 })}, "", "", `"messageIndex":3,"totalMessages":3`},
		{"no indexes", []build{content(func(a *builders.ContentArgs) {})}, "", "", `"message":"hi","messageSubtype":"chat","notification"`},
		{"empty message", []build{content(func(a *builders.ContentArgs) { a.Message = "" })}, "", "", `"message":""`},

		// reasoningContent is required; whitespace counts as content.
		{"reasoningContent missing", []build{reasoning(func(a *builders.ReasoningArgs) { a.ReasoningContent = "" })}, "reasoningContent", builders.RuleRequired, ""},
		{"reasoningContent whitespace", []build{reasoning(func(a *builders.ReasoningArgs) { a.ReasoningContent = " " })}, "", "", `"reasoningContent":" "`},

		// toolCalls: a non-empty JSON array of objects, passed through.
		{"toolCalls missing", []build{toolRequest(func(a *builders.ToolRequestArgs) { a.ToolCalls = nil })}, "toolCalls", builders.RuleRequired, ""},
		{"toolCalls empty", []build{toolRequest(func(a *builders.ToolRequestArgs) { a.ToolCalls = raw(` [ ] `) })}, "toolCalls", builders.RuleRequired, ""},
		{"toolCalls not JSON", []build{toolRequest(func(a *builders.ToolRequestArgs) { a.ToolCalls = raw(`[{]`) })}, "toolCalls", builders.RuleJSON, ""},
		{"toolCalls an object", []build{toolRequest(func(a *builders.ToolRequestArgs) { a.ToolCalls = raw(`{"id":"a"}`) })}, "toolCalls", builders.RuleType, ""},
		{"toolCalls of numbers", []build{toolRequest(func(a *builders.ToolRequestArgs) { a.ToolCalls = raw(`[{"id":"a"},1]`) })}, "toolCalls", builders.RuleType, ""},
		{"toolCalls unchecked inside", []build{toolRequest(func(a *builders.ToolRequestArgs) { a.ToolCalls = raw(`[{"id":"a"},{}]`) })}, "", "", `"toolCalls":[{"id":"a"},{}]`},

		// code is required; iteration is a number from 0.
		{"code missing", []build{errorPush(func(a *builders.ErrorArgs) { a.Code = "" })}, "code", builders.RuleRequired, ""},
		{"iteration negative", []build{errorPush(func(a *builders.ErrorArgs) { a.Iteration = push.Some(-1) })}, "iteration", builders.RuleRange, ""},
		{"iteration null", []build{errorPush(func(a *builders.ErrorArgs) { a.Iteration = push.Null[int]() })}, "iteration", builders.RuleType, ""},
		{"iteration 0 and empty message", []build{errorPush(func(a *builders.ErrorArgs) { a.Iteration = push.Some(0) })}, "", "", `"code":"INTERNAL_ERROR","message":"","iteration":0`},

		// notification: show from its enum; strings, booleans and data typed; null refused.
		{"show null", notification(push.Notification{Show: push.Null[push.Show]()}), "notification.show", builders.RuleEnum, ""},
		{"show true", notification(push.Notification{Show: push.Some(push.Show("true"))}), "notification.show", builders.RuleEnum, ""},
		{"show false", notification(push.Notification{Show: push.Some(push.ShowNever)}), "", "", `"notification":{"show":false}`},
		{"show when-hidden", notification(push.Notification{Show: push.Some(push.ShowWhenHidden)}), "", "", `"show":"when-hidden"`},
		{"title null", notification(push.Notification{Title: push.Null[string]()}), "notification.title", builders.RuleType, ""},
		{"tag null", notification(push.Notification{Tag: push.Null[string]()}), "notification.tag", builders.RuleType, ""},
		{"renotify null", notification(push.Notification{Renotify: push.Null[bool]()}), "notification.renotify", builders.RuleType, ""},
		{"silent null", notification(push.Notification{Silent: push.Null[push.Silent]()}), "notification.silent", builders.RuleType, ""},
		{"strings and booleans", notification(push.Notification{Title: push.Some(""), Icon: push.Some("/i.png"), Badge: push.Some("/b.png"), RequireInteraction: push.Some(false)}), "", "",
			`"badge":"/b.png"`},
		{"data null", notification(push.Notification{Data: raw(`null`)}), "notification.data", builders.RuleType, ""},
		{"data an array", notification(push.Notification{Data: raw(`[]`)}), "notification.data", builders.RuleType, ""},
		{"data not JSON", notification(push.Notification{Data: raw(`{`)}), "notification.data", builders.RuleJSON, ""},
		{"data an object", notification(push.Notification{Data: raw(`{"url":"/x"}`)}), "", "", `"data":{"url":"/x"}`},
		{"unknown member repeats a known key", notification(push.Notification{Unknown: []push.Member{{Key: "title", Value: raw(`"x"`)}}}), "notification.title", builders.RuleJSON, ""},
		{"unknown member not JSON", notification(push.Notification{Unknown: []push.Member{{Key: "x", Value: raw(`tru`)}}}), "notification.x", builders.RuleJSON, ""},
		{"unknown member kept", notification(push.Notification{Unknown: []push.Member{{Key: "futureField", Value: raw(`{"v":2}`)}}}), "", "", `"futureField":{"v":2}`},
	} {
		for i, b := range tc.builds {
			p, warnings, err := b()
			if tc.field == "" {
				if err != nil {
					t.Errorf("%s (builder %d): %v", tc.name, i, err)
					continue
				}
				out, err := push.Encode(p)
				if err != nil || !strings.Contains(string(out), tc.want) {
					t.Errorf("%s (builder %d): encoded %s, %v; want it to contain %s", tc.name, i, out, err, tc.want)
				}
				if warnings != nil {
					t.Errorf("%s (builder %d): warnings %v", tc.name, i, warnings)
				}
				continue
			}
			var be *builders.Error
			if !errors.As(err, &be) || be.Field != tc.field || be.Rule != tc.rule || p != nil {
				t.Errorf("%s (builder %d): got %s, %v; want field %s rule %s", tc.name, i, encoded(p), err, tc.field, tc.rule)
				continue
			}
			if !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), string(be.Kind)) {
				t.Errorf("%s: message %q does not name the field and the kind", tc.name, err)
			}
		}
	}
}

func encoded(p push.Push) string {
	if p == nil {
		return "no push"
	}
	out, err := push.Encode(p)
	if err != nil {
		return err.Error()
	}
	return string(out)
}

// The first rule broken, in wire order, is the one reported.
func TestFirstRuleBrokenIsReported(t *testing.T) {
	_, _, err := builders.Builder{}.BuildContentPush(builders.ContentArgs{MessageIndex: 5})
	var be *builders.Error
	if !errors.As(err, &be) || be.Field != "messageType" || be.Kind != push.KindContent {
		t.Fatalf("got %v", err)
	}
	want := "builders: content push: messageType is required (rule required)"
	if err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
}
