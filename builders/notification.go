package builders

import (
	"errors"

	"amsg/push"
)

// checkNotification applies the standard's rules to a notification
// directive. Absent members are fine; present ones must have their type, and
// null is refused everywhere. Unknown members are kept as they are.
func checkNotification(v *validator, n *push.Notification) {
	if !n.Show.IsAbsent() {
		s, _ := n.Show.Get()
		v.check(s.Valid(), "notification.show", RuleEnum, `must be "auto", "always", "when-hidden" or false`)
	}
	for _, f := range []struct {
		name string
		o    push.Optional[string]
	}{{"title", n.Title}, {"body", n.Body}, {"icon", n.Icon}, {"badge", n.Badge}, {"tag", n.Tag}} {
		v.check(!f.o.IsNull(), "notification."+f.name, RuleType, "must be a string when present")
	}
	for _, f := range []struct {
		name string
		o    push.Optional[bool]
	}{{"renotify", n.Renotify}, {"requireInteraction", n.RequireInteraction}} {
		v.check(!f.o.IsNull(), "notification."+f.name, RuleType, "must be a boolean when present")
	}
	v.check(!n.Silent.IsNull(), "notification.silent", RuleType, `must be a boolean or "when-visible" when present`)
	if n.Data != nil {
		kind := jsonKind(n.Data)
		if v.check(kind != 0, "notification.data", RuleJSON, "must be valid UTF-8 JSON") {
			v.check(kind == '{', "notification.data", RuleType, "must be a plain object when present")
		}
	}
	if len(n.Unknown) > 0 && v.err == nil {
		// The encoder owns the rules for unknown members (valid JSON, no key
		// written twice); ask it rather than restate them.
		_, err := n.MarshalJSON()
		var fe *push.FieldError
		if errors.As(err, &fe) {
			v.check(false, "notification."+fe.Field, RuleJSON, "cannot be written: %v", fe.Err)
		}
	}
}
