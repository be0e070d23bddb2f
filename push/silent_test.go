package push_test

import (
	"errors"
	"strings"
	"testing"

	"amsg/push"
)

// TestSilentWhenVisibleRoundTrips decodes and re-encodes notification.silent
// in its three forms; another value is refused naming the field.
func TestSilentWhenVisibleRoundTrips(t *testing.T) {
	for _, silent := range []string{`true`, `false`, `"when-visible"`} {
		in := `{"messageKind":"content","messageId":"m","message":"hi","notification":{"silent":` + silent + `}}`
		p, err := push.Decode([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", silent, err)
		}
		out, err := push.Encode(p)
		if err != nil || !strings.Contains(string(out), `"silent":`+silent) {
			t.Errorf("%s re-encoded as %s (%v)", silent, out, err)
		}
	}
	for _, silent := range []string{`"yes"`, `1`, `"true"`} {
		_, err := push.Decode([]byte(`{"messageKind":"content","messageId":"m","message":"hi","notification":{"silent":` + silent + `}}`))
		var fe *push.FieldError
		if err == nil || !errors.As(err, &fe) || fe.Field != "notification.silent" {
			t.Errorf("silent %s: %v, want a FieldError for notification.silent", silent, err)
		}
	}
	if _, err := push.Encode(&push.ContentPush{Message: "hi", Common: push.Common{Notification: &push.Notification{Silent: push.Some(push.Silent("loud"))}}}); err == nil {
		t.Error("an invalid Silent was encoded")
	}
}
