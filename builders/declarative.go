package builders

import (
	"encoding/json"
	"net/url"
	"unicode/utf8"

	"amsg/push"
	"amsg/push/notifytext"
)

// Declarative Web Push (Push API "declarative push message", Safari and iOS
// 18.4+): a payload with "web_push": 8030 and a notification holding a
// non-empty title and an absolute navigate URL is shown by the browser
// itself when no service worker replaces it, so a push still shows when iOS
// has evicted the worker. "mutable": true lets a live worker rewrite it;
// WebKit reads it inside notification, the Push API draft beside it, so it
// goes in both.
//
// The standard's notification directive and the declarative notification
// share one member: their common members (title, body, tag, icon, silent,
// data) mean the same thing in both, and each side ignores the members it
// does not know (navigate and mutable here; show, renotify, … there). So
// the builders fill the directive's title, body and tag with exactly what
// amsg-sw would have shown without them, and upstream workers show the same
// notification as before.
const (
	// DeclarativeMagic is the value of the root member web_push.
	DeclarativeMagic = 8030
	// NotificationBodyMax bounds notification.body in bytes: the banner
	// shows a few lines, and every byte of it is spent twice (message holds
	// the whole text), out of the 3993 a push may carry.
	NotificationBodyMax = 512
	// NotificationTitleMax bounds notification.title in bytes: a banner
	// shows one line of it, and a 5 000-character contactName made a
	// 5 003-byte title (issue 22).
	NotificationTitleMax = 128
	// SessionTagPrefix starts the tag of the quiet notifications of a
	// session (tool requests, errors); sw/sw.js closes it when the session's
	// reply is shown.
	SessionTagPrefix = "amsg-session-"
)

// pageOrigin is the Builder's PageURL as an origin (scheme://host[:port]),
// or "" when it is not an absolute http(s) URL.
func (b Builder) pageOrigin() string {
	if b.PageURL == "" { // no page: nothing to parse on every push
		return ""
	}
	u, err := url.Parse(b.PageURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// ConversationURL is the companion page's URL of a session's conversation
// at origin: what a click on its notification opens.
func ConversationURL(origin, sessionID string) string {
	return origin + "/#/chat/" + url.PathEscape(sessionID)
}

// SessionTag is the notification tag of a session's quiet notifications.
func SessionTag(sessionID string) string {
	return SessionTagPrefix + sessionID
}

// displayTitle is the title amsg's worker shows for a push without
// notification.title: title, else "From <contactName>", else its default,
// in English; Localize turns them into a device's language.
func displayTitle(title, contactName string) string {
	switch {
	case title != "":
		return title
	case contactName != "":
		return FromContactTitle(contactName)
	}
	return notifytext.Text(notifytext.English, notifytext.DefaultTitle)
}

// FromContactTitle is the title amsg gives a contact's push when its
// producer gave none ("From <contactName>", in English; Localize turns it
// into a device's language). The standard's producers write "来自
// <contactName>".
func FromContactTitle(contactName string) string {
	return notifytext.Text(notifytext.English, notifytext.FromContact, contactName)
}

// summary cuts text to at most NotificationBodyMax bytes on a rune
// boundary, marking a cut with an ellipsis.
func summary(text string) string {
	return cutText(text, NotificationBodyMax)
}

// cutText cuts text to at most max bytes on a rune boundary, marking a cut
// with an ellipsis.
func cutText(text string, max int) string {
	if len(text) <= max {
		return text
	}
	const ellipsis = "…"
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + ellipsis
}

// declare makes c a declarative message when the Builder knows the page's
// origin: web_push and mutable at the root, and the title, body, tag,
// navigate and mutable the notification lacks (an empty title too, and a
// relative icon made absolute, which Safari requires). The caller's
// directive is copied, never changed: the caller may share it between
// pushes. A push whose directive says show:false stays as it is: a
// declarative message is always shown.
func (b Builder) declare(c *push.Common, title, body, tag string) {
	origin := b.pageOrigin()
	if origin == "" || (c.Notification != nil && showsNever(c.Notification)) {
		return
	}
	n := push.Notification{}
	if c.Notification != nil {
		n = *c.Notification
		n.Unknown = append([]push.Member(nil), c.Notification.Unknown...)
	}
	if icon, ok := n.Icon.Get(); ok {
		u, err := url.Parse(origin + "/")
		if err == nil {
			u, err = u.Parse(icon)
		}
		if err != nil {
			return // Safari would refuse the whole push
		}
		n.Icon = push.Some(u.String())
	}
	if t, _ := n.Title.Get(); t == "" {
		n.Title = push.Some(title)
	}
	if n.Body.IsAbsent() && body != "" {
		n.Body = push.Some(body)
	}
	if n.Tag.IsAbsent() {
		n.Tag = push.Some(tag)
	}
	bound(&n)
	n.Unknown = withMember(n.Unknown, "navigate", stringJSON(ConversationURL(origin, c.SessionID)))
	n.Unknown = withMember(n.Unknown, "mutable", json.RawMessage("true"))
	c.Notification = &n
	c.Unknown = withMember(c.Unknown, "web_push", json.RawMessage("8030"))
	c.Unknown = withMember(c.Unknown, "mutable", json.RawMessage("true"))
}

// quiet gives a tool_request or error push a directive that every worker
// shows (show:'always', silent, under the session's tag, which the reply's
// notification replaces), then makes it declarative. Members the caller
// set are kept; a caller's show:false is left alone.
func (b Builder) quiet(c *push.Common, title, body string) {
	n := push.Notification{}
	if c.Notification != nil {
		if showsNever(c.Notification) {
			return
		}
		n = *c.Notification
	}
	if n.Show.IsAbsent() {
		n.Show = push.Some(push.ShowAlways)
	}
	if n.Silent.IsAbsent() {
		n.Silent = push.Some(push.SilentOn)
	}
	if n.Title.IsAbsent() {
		n.Title = push.Some(title)
	}
	if n.Body.IsAbsent() {
		n.Body = push.Some(body)
	}
	if n.Tag.IsAbsent() {
		n.Tag = push.Some(SessionTag(c.SessionID))
	}
	bound(&n)
	c.Notification = &n
	b.declare(c, title, body, SessionTag(c.SessionID))
}

// bound cuts the title and body of a notification amsg writes to
// NotificationTitleMax and NotificationBodyMax bytes, the caller's own
// members included: whatever a caller names, a banner stays a banner.
func bound(n *push.Notification) {
	if t, ok := n.Title.Get(); ok {
		n.Title = push.Some(cutText(t, NotificationTitleMax))
	}
	if t, ok := n.Body.Get(); ok {
		n.Body = push.Some(summary(t))
	}
}

func showsNever(n *push.Notification) bool {
	s, ok := n.Show.Get()
	return ok && s == push.ShowNever
}

// withMember returns members with key set to value unless it is there.
func withMember(members []push.Member, key string, value json.RawMessage) []push.Member {
	for _, m := range members {
		if m.Key == key {
			return members
		}
	}
	return append(members, push.Member{Key: key, Value: value})
}

func stringJSON(s string) json.RawMessage {
	raw, _ := json.Marshal(s) // a string always marshals
	return raw
}
