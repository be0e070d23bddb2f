// Package declarativetest reads a push payload as a browser's declarative
// push message parser does (W3C Push API, "declarative push message", with
// WebKit's stricter reading: navigate and icon absolute URLs, a non-empty
// title, mutable inside notification), so tests can show that what amsg
// sends is one. It says nothing about how a browser displays it.
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
	Navigate *url.URL
	Mutable  bool // notification.mutable (WebKit) or the root's (the draft)
}

// Parse reads payload as a declarative push message. The rules: a JSON
// object whose web_push is the number 8030, whose notification is an object
// with a non-empty string title and an absolute URL navigate; body and tag
// strings when present, icon an absolute URL, silent and mutable booleans;
// renotify true needs a tag.
func Parse(payload []byte) (Message, error) {
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
	if out.Title == "" {
		return Message{}, errors.New("notification.title is empty")
	}
	var navigate string
	if err := member(m.Notification, "navigate", true, &navigate); err != nil {
		return Message{}, err
	}
	var err error
	if out.Navigate, err = absoluteURL(navigate); err != nil {
		return Message{}, fmt.Errorf("notification.navigate: %w", err)
	}
	var icon string
	if err := member(m.Notification, "icon", false, &icon); err != nil {
		return Message{}, err
	}
	if _, present := m.Notification["icon"]; present {
		if _, err := absoluteURL(icon); err != nil {
			return Message{}, fmt.Errorf("notification.icon: %w", err)
		}
	}
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
	if err := member(m.Notification, "mutable", false, &out.Mutable); err != nil {
		return Message{}, err
	}
	out.Mutable = out.Mutable || (m.Mutable != nil && *m.Mutable)
	return out, nil
}

// absoluteURL parses s as WebKit does, without a base.
func absoluteURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return nil, fmt.Errorf("%q is not an absolute URL", s)
	}
	return u, nil
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
