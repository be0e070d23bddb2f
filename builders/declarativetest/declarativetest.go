// Package declarativetest reads a push payload as a browser's declarative
// push message parser does (W3C Push API, "declarative push message"), so
// tests can show that what amsg sends is one. It says nothing about how a
// browser displays it.
package declarativetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
)

// Message is what a user agent would take from a declarative push message.
type Message struct {
	Title    string
	Body     string
	Tag      string
	Silent   bool
	Navigate *url.URL // resolved against the scope
	Mutable  bool
}

// Parse reads payload as a declarative push message for a service worker
// registration of scope (an absolute URL). The rules: a JSON object whose
// web_push is the number 8030, whose notification is an object with string
// title and navigate, navigate resolving against scope; body and tag strings
// when present, silent and the root mutable booleans when present; renotify
// true needs a tag.
func Parse(payload []byte, scope string) (Message, error) {
	var m struct {
		WebPush      *float64                   `json:"web_push"`
		Notification map[string]json.RawMessage `json:"notification"`
		Mutable      *bool                      `json:"mutable"`
	}
	if err := json.Unmarshal(payload, &m); err != nil {
		return Message{}, fmt.Errorf("not a JSON object with an object notification: %w", err)
	}
	if m.WebPush == nil || *m.WebPush != 8030 {
		return Message{}, errors.New("web_push is not the number 8030")
	}
	if m.Notification == nil {
		return Message{}, errors.New("notification is missing")
	}
	var out Message
	if err := member(m.Notification, "title", true, &out.Title); err != nil {
		return Message{}, err
	}
	var navigate string
	if err := member(m.Notification, "navigate", true, &navigate); err != nil {
		return Message{}, err
	}
	base, err := url.Parse(scope)
	if err != nil || !base.IsAbs() {
		return Message{}, fmt.Errorf("scope %q is not an absolute URL", scope)
	}
	ref, err := url.Parse(navigate)
	if err != nil {
		return Message{}, fmt.Errorf("navigate %q is not a URL: %w", navigate, err)
	}
	out.Navigate = base.ResolveReference(ref)
	if err := member(m.Notification, "body", false, &out.Body); err != nil {
		return Message{}, err
	}
	if err := member(m.Notification, "tag", false, &out.Tag); err != nil {
		return Message{}, err
	}
	if err := member(m.Notification, "silent", false, &out.Silent); err != nil {
		return Message{}, err
	}
	var renotify bool
	if err := member(m.Notification, "renotify", false, &renotify); err != nil {
		return Message{}, err
	}
	if renotify && out.Tag == "" {
		return Message{}, errors.New("renotify without a tag")
	}
	out.Mutable = m.Mutable != nil && *m.Mutable
	return out, nil
}

// member decodes notification[name] into into (a *string or *bool).
func member(n map[string]json.RawMessage, name string, required bool, into any) error {
	raw, ok := n[name]
	if !ok {
		if required {
			return fmt.Errorf("notification.%s is missing", name)
		}
		return nil
	}
	if err := json.Unmarshal(raw, into); err != nil || string(raw) == "null" {
		return fmt.Errorf("notification.%s has the wrong type: %s", name, raw)
	}
	return nil
}
