package push

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Notification is the notification directive: a producer's hint to the
// service worker's notification renderer. Every member is optional; an absent
// one falls back to the push's top-level field (body to message, icon to
// avatarUrl, tag to messageId, …) and then to the service worker's default.
type Notification struct {
	// Show is the display policy. Absent or ShowAuto shows a notification
	// for content pushes only.
	Show               Optional[Show]
	Title              Optional[string]
	Body               Optional[string]
	Icon               Optional[string]
	Badge              Optional[string]
	Tag                Optional[string]
	Renotify           Optional[bool]
	RequireInteraction Optional[bool]
	// Silent is true, false, or SilentWhenVisible.
	Silent Optional[Silent]
	// Data is handed to the shown notification; raw JSON, nil when absent.
	Data json.RawMessage
	// Unknown holds members this package does not know, in arrival order,
	// kept for forward compatibility.
	Unknown []Member
}

func (n *Notification) bindings() []binding {
	return []binding{
		{"show", &n.Show},
		{"title", &n.Title},
		{"body", &n.Body},
		{"icon", &n.Icon},
		{"badge", &n.Badge},
		{"tag", &n.Tag},
		{"renotify", &n.Renotify},
		{"requireInteraction", &n.RequireInteraction},
		{"silent", &n.Silent},
		{"data", &n.Data},
	}
}

// MarshalJSON writes the directive's members in the documented order, then
// the unknown ones.
func (n Notification) MarshalJSON() ([]byte, error) {
	return appendObject(nil, "", n.bindings(), n.Unknown)
}

// UnmarshalJSON reads a directive, keeping unknown members.
func (n *Notification) UnmarshalJSON(data []byte) error {
	members, err := parseObject(data)
	if err != nil {
		return err
	}
	var fresh Notification
	if fresh.Unknown, err = decodeMembers(fresh.bindings(), members, ""); err != nil {
		return err
	}
	*n = fresh
	return nil
}

// Show is the notification display policy: "auto", "always", "when-hidden",
// or the JSON boolean false (ShowNever).
type Show string

// Display policies.
const (
	ShowAuto       Show = "auto"        // the service worker's default: content pushes only
	ShowAlways     Show = "always"      // always show
	ShowWhenHidden Show = "when-hidden" // only when no window of the app is visible
	ShowNever      Show = "false"       // never show; written as the JSON boolean false
)

// Valid reports whether s is one of the four policies.
func (s Show) Valid() bool {
	switch s {
	case ShowAuto, ShowAlways, ShowWhenHidden, ShowNever:
		return true
	}
	return false
}

// appendJSON appends a valid policy.
func (s Show) appendJSON(b []byte) []byte {
	if s == ShowNever {
		return append(b, "false"...)
	}
	return appendString(b, string(s))
}

func (s Show) invalid() error {
	return fmt.Errorf("want %q, %q, %q or false, not %q", ShowAuto, ShowAlways, ShowWhenHidden, snippet(string(s)))
}

// MarshalJSON writes ShowNever as false and the other policies as strings.
// Any other value is an error.
func (s Show) MarshalJSON() ([]byte, error) {
	if !s.Valid() {
		return nil, s.invalid()
	}
	return s.appendJSON(nil), nil
}

// UnmarshalJSON reads one of the four policies. Anything else (true, another
// string) is an error: a policy this package cannot name cannot be written
// back faithfully, and it decides whether the user sees a notification.
func (s *Show) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if string(data) == "false" {
		*s = ShowNever
		return nil
	}
	var v string
	if err := json.Unmarshal(data, &v); err == nil && Show(v).Valid() && Show(v) != ShowNever {
		*s = Show(v)
		return nil
	}
	return Show(data).invalid()
}

// Silent is whether a notification is silent: the JSON booleans, or
// "when-visible", silent while a window of the app is visible and ringing
// otherwise (upstream's @aab9cff), decided by the service worker from the
// same reading of the windows as show.
type Silent string

// Silent values.
const (
	SilentOn          Silent = "true"         // written as the JSON boolean true
	SilentOff         Silent = "false"        // written as the JSON boolean false
	SilentWhenVisible Silent = "when-visible" // silent only while a window is visible
)

// Valid reports whether s is one of the three values.
func (s Silent) Valid() bool { return s == SilentOn || s == SilentOff || s == SilentWhenVisible }

// MarshalJSON writes SilentOn and SilentOff as booleans and
// SilentWhenVisible as its string. Any other value is an error.
func (s Silent) MarshalJSON() ([]byte, error) {
	switch s {
	case SilentOn, SilentOff:
		return []byte(s), nil
	case SilentWhenVisible:
		return appendString(nil, string(s)), nil
	}
	return nil, s.invalid()
}

// UnmarshalJSON reads true, false or "when-visible"; anything else is an
// error, as a value this package cannot name cannot be written back.
func (s *Silent) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch string(data) {
	case "true", "false":
		*s = Silent(data)
		return nil
	}
	var v string
	if err := json.Unmarshal(data, &v); err == nil && Silent(v) == SilentWhenVisible {
		*s = SilentWhenVisible
		return nil
	}
	return Silent(data).invalid()
}

func (s Silent) invalid() error {
	return fmt.Errorf("want true, false or %q, not %q", SilentWhenVisible, snippet(string(s)))
}
