package webpush

import (
	"strings"
	"testing"

	"amsg/builders"
	"amsg/push"
)

// A declarative content push's notification body is already cut to
// builders.NotificationBodyMax: cutting the message for Apple leaves it as
// it is, without a second ellipsis.
func TestCutKeepsAShortBody(t *testing.T) {
	p, _, err := builders.Builder{PageURL: "https://amsg.example"}.BuildContentPush(builders.ContentArgs{
		Common:  builders.Common{MessageType: push.TypeInstant, Source: push.SourceInstant, SessionID: "s"},
		Message: strings.Repeat("好", 1700),
	})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := push.Encode(p)
	want, _ := p.Notification.Body.Get()
	cut, err := cutContent(payload, p.MessageID, push.MaxPayloadBytes)
	if err != nil {
		t.Fatal(err)
	}
	d, err := push.Decode(cut)
	if err != nil {
		t.Fatal(err)
	}
	if body, _ := d.(*push.ContentPush).Notification.Body.Get(); body != want {
		t.Errorf("body after the cut ends %q (%d bytes), want the builders' %d bytes unchanged", body[len(body)-9:], len(body), len(want))
	}
}
