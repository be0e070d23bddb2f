package builders

import (
	"net/url"
	"time"

	"amsg/push"
)

// Approvals (issue 21): a tool call the person must approve travels as a
// tool_request push whose notification has Approve and Deny buttons and
// whose interrupt member carries what the service worker posts to decide,
// and its outcome as a quiet content push under the same tag, which
// replaces that notification on the devices that did not decide.

// Approval makes a tool_request push an approval.
type Approval struct {
	InterruptID   string
	ToolCallID    string
	ExpiresAt     time.Time
	DecisionToken string
	// Title, Body, ApproveTitle and DenyTitle are the notification's texts,
	// in the language of the request.
	Title, Body             string
	ApproveTitle, DenyTitle string
	// Tag is the notification's tag: the outcome's push replaces it.
	Tag string
}

// InterruptURL is the companion page's approval screen of an interrupt.
func InterruptURL(origin, interruptID string) string {
	return origin + "/#/interrupt/" + url.PathEscape(interruptID)
}

// BuildApprovalPush builds the tool_request push of a, made an approval by
// ap: a notification that always shows, sound and all, stays until
// answered, and has the two actions; interrupt: {id, kind, toolCallId,
// expiresAt, decisionToken}. Its navigate opens the approval screen, for
// Safari, which shows no buttons.
func (b Builder) BuildApprovalPush(a ToolRequestArgs, ap Approval) (*push.ToolRequestPush, error) {
	n := &push.Notification{Show: push.Some(push.ShowAlways), Title: push.Some(ap.Title), Body: push.Some(summary(ap.Body)),
		Tag: push.Some(ap.Tag), RequireInteraction: push.Some(true), Silent: push.Some(push.SilentOff)}
	n.Unknown = []push.Member{{Key: "actions", Value: push.MustMarshalNoEscape([]map[string]string{
		{"action": "approve", "title": ap.ApproveTitle}, {"action": "deny", "title": ap.DenyTitle}})}}
	b.navigateToInterrupt(n, ap.InterruptID)
	a.Notification = n
	p, err := b.BuildToolRequestPush(a)
	if err != nil {
		return nil, err
	}
	p.Unknown = append(p.Unknown, interruptMember{ID: ap.InterruptID, ToolCallID: ap.ToolCallID,
		ExpiresAt: push.FormatTimestamp(ap.ExpiresAt), DecisionToken: ap.DecisionToken}.member())
	return p, nil
}

// Outcome is how an approval ended, for the push that says so.
type Outcome struct {
	InterruptID string
	ToolCallID  string
	State       string // approved, denied or expired
	Title, Text string
	// ContactName is the approval's, so that a device in another language
	// recognizes its title "From <contactName>" (Localize).
	ContactName string
	Tag         string // the approval's
}

// BuildOutcomePush builds the quiet content push that replaces an
// approval's notification: message and body are the outcome's text, and
// interrupt: {id, kind, toolCallId, state} tells a page which approval it
// closes.
func (b Builder) BuildOutcomePush(c Common, o Outcome) (*push.ContentPush, error) {
	c.Notification = &push.Notification{Show: push.Some(push.ShowAlways), Title: push.Some(o.Title), Body: push.Some(o.Text),
		Tag: push.Some(o.Tag), Silent: push.Some(push.SilentOn), RequireInteraction: push.Some(false)}
	b.navigateToInterrupt(c.Notification, o.InterruptID)
	p, _, err := b.BuildContentPush(ContentArgs{Common: c, Message: o.Text, Title: o.Title, ContactName: o.ContactName})
	if err != nil {
		return nil, err
	}
	p.Unknown = append(p.Unknown, interruptMember{ID: o.InterruptID, ToolCallID: o.ToolCallID, State: o.State}.member())
	return p, nil
}

// interruptMember is a push's interrupt member: what a worker posts to
// decide an approval, or how one ended.
type interruptMember struct {
	ID            string `json:"id"`
	Kind          string `json:"kind"` // "approval", the one kind so far
	ToolCallID    string `json:"toolCallId"`
	ExpiresAt     string `json:"expiresAt,omitempty"`
	DecisionToken string `json:"decisionToken,omitempty"`
	State         string `json:"state,omitempty"`
}

func (m interruptMember) member() push.Member {
	m.Kind = "approval"
	return push.Member{Key: "interrupt", Value: push.MustMarshalNoEscape(m)}
}

// navigateToInterrupt points a notification at the approval screen, when
// the Builder knows the page's origin: a declarative message's click (and
// Safari, which shows no buttons) opens it.
func (b Builder) navigateToInterrupt(n *push.Notification, interruptID string) {
	if origin := b.pageOrigin(); origin != "" {
		n.Unknown = append(n.Unknown, push.Member{Key: "navigate", Value: stringJSON(InterruptURL(origin, interruptID))})
	}
}
