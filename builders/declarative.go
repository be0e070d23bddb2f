package builders

import (
	"encoding/json"
	"net/url"
	"unicode/utf8"

	"amsg/push"
)

// Declarative Web Push (Push API "declarative push message", Safari and iOS
// 18.4+): a payload with "web_push": 8030 and a notification holding at
// least title and navigate is shown by the browser itself when no service
// worker replaces it, so a push still shows when iOS has evicted the worker.
// "mutable": true (a member of the message, beside notification) lets a
// live worker rewrite it.
//
// The standard's notification directive and the declarative notification
// share one member: their common members (title, body, tag, icon, silent,
// data) mean the same thing in both, and each side ignores the members it
// does not know (navigate here; show, renotify, … there). So the builders
// fill the directive's title, body and tag with exactly what amsg-sw would
// have shown without them, and upstream workers show the same notification
// as before.
const (
	// DeclarativeMagic is the value of the root member web_push.
	DeclarativeMagic = 8030
	// NotificationBodyMax bounds notification.body in bytes: the banner
	// shows a few lines, and every byte of it is spent twice (message holds
	// the whole text), out of the 3993 a push may carry.
	NotificationBodyMax = 512
	// SessionTagPrefix starts the tag of the quiet notifications of a
	// session (tool requests, errors); sw/sw.js closes it when the session's
	// reply is shown.
	SessionTagPrefix = "amsg-session-"
)

// Texts of the quiet notifications. The standard's producers write Chinese
// titles (来自 <contact>); these follow the page's English.
const (
	toolRequestBody = "%s needs this device to continue"
	errorTitle      = "The reply was interrupted"
)

// ConversationPath is the companion page's URL of a session's conversation,
// relative to the page's origin: what a click on its notification opens.
func ConversationPath(sessionID string) string {
	return "/#/chat/" + url.PathEscape(sessionID)
}

// SessionTag is the notification tag of a session's quiet notifications.
func SessionTag(sessionID string) string {
	return SessionTagPrefix + sessionID
}

// displayTitle is the title amsg-sw shows for a push without
// notification.title: title, else 来自 <contactName>, else its default.
func displayTitle(title, contactName string) string {
	switch {
	case title != "":
		return title
	case contactName != "":
		return "来自 " + contactName
	}
	return "New notification"
}

// summary cuts text to at most NotificationBodyMax bytes on a rune
// boundary, marking a cut with an ellipsis.
func summary(text string) string {
	if len(text) <= NotificationBodyMax {
		return text
	}
	const ellipsis = "…"
	cut := NotificationBodyMax - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + ellipsis
}

// declare makes c a declarative message: web_push and mutable at the root,
// and the title, body, tag and navigate the notification lacks. The
// caller's directive is copied, never changed: the caller may share it
// between pushes. A push whose directive says show:false stays as it is:
// a declarative message is always shown.
func declare(c *push.Common, title, body, tag string) {
	n := push.Notification{}
	if c.Notification != nil {
		if s, ok := c.Notification.Show.Get(); ok && s == push.ShowNever {
			return
		}
		n = *c.Notification
		n.Unknown = append([]push.Member(nil), c.Notification.Unknown...)
	}
	if n.Title.IsAbsent() {
		n.Title = push.Some(title)
	}
	if n.Body.IsAbsent() && body != "" {
		n.Body = push.Some(body)
	}
	if n.Tag.IsAbsent() {
		n.Tag = push.Some(tag)
	}
	if !hasMember(n.Unknown, "navigate") {
		n.Unknown = append(n.Unknown, member("navigate", ConversationPath(c.SessionID)))
	}
	c.Notification = &n
	for _, m := range []push.Member{{Key: "web_push", Value: json.RawMessage("8030")}, {Key: "mutable", Value: json.RawMessage("true")}} {
		if !hasMember(c.Unknown, m.Key) {
			c.Unknown = append(c.Unknown, m)
		}
	}
}

// quiet gives a tool_request or error push a directive that every worker
// shows (show:'always', silent, under the session's tag, which the reply's
// notification replaces), then makes it declarative. Members the caller
// set are kept.
func quiet(c *push.Common, title, body string) {
	n := push.Notification{}
	if c.Notification != nil {
		if s, ok := c.Notification.Show.Get(); ok && s == push.ShowNever {
			return
		}
		n = *c.Notification
	}
	if n.Show.IsAbsent() {
		n.Show = push.Some(push.ShowAlways)
	}
	if n.Silent.IsAbsent() {
		n.Silent = push.Some(true)
	}
	c.Notification = &n
	declare(c, title, body, SessionTag(c.SessionID))
}

func hasMember(members []push.Member, key string) bool {
	for _, m := range members {
		if m.Key == key {
			return true
		}
	}
	return false
}

func member(key, value string) push.Member {
	raw, _ := json.Marshal(value) // a string always marshals
	return push.Member{Key: key, Value: raw}
}
