package webpush

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"amsg/push"
	"amsg/push/pushtest"
)

// newAppleFixture is a fixture whose sender also reaches a stand-in for
// Apple's push service: a TLS pushtest server named web.push.apple.com.
func newAppleFixture(t *testing.T, subject string) (*fixture, *pushtest.Server) {
	t.Helper()
	var apple *pushtest.Server
	f := newFixture(t, func(c *Config) {
		apple = pushtest.NewServerWithOptions(c.VAPIDPublicKey, pushtest.Options{TLS: true, Host: "web.push.apple.com"})
		t.Cleanup(apple.Close)
		c.RootCAs.AppendCertsFromPEM(apple.CertPEM()) // beside the fixture's push service
		c.Subject, c.Resolver = subject, apple.Resolver()
	})
	return f, apple
}

// TestAppleRefusedWithPlaceholderSubject: with the default subject, a push
// to an Apple device fails as a configuration error without a request and
// the device stays; the user's other device still gets it.
func TestAppleRefusedWithPlaceholderSubject(t *testing.T) {
	f, apple := newAppleFixture(t, "mailto:amsg@localhost")
	if f.sender.AppleSubjectOK() {
		t.Fatal("AppleSubjectOK with a placeholder subject")
	}
	if !strings.Contains(f.logs.String(), "Apple") {
		t.Errorf("no startup warning: %s", f.logs)
	}
	msg := contentPush("msg_apple", 10)
	// A configuration error, not gone: the courier keeps the device.
	d := f.send(t, apple.Subscribe(), msg)
	if d.Outcome != push.OutcomeConfigError || d.Err == nil || !strings.Contains(d.Err.Error(), "AMSG_VAPID_SUBJECT") {
		t.Errorf("Apple device: %+v", d)
	}
	if other := f.send(t, f.ps.Subscribe(), msg); other.Outcome != push.OutcomeDelivered {
		t.Errorf("other device: %+v", other)
	}
	if n := apple.Counts().Requests; n != 0 {
		t.Errorf("%d requests reached Apple", n)
	}
}

// TestAppleLongReplyIsOneVisiblePush: a 20 kB reply reaches an Apple
// device as one content push cut to the budget, with _truncated naming
// the outbox entry, and a Chromium device as `_multipart` chunks.
func TestAppleLongReplyIsOneVisiblePush(t *testing.T) {
	f, apple := newAppleFixture(t, "mailto:ops@push-ops.net")
	if !f.sender.AppleSubjectOK() {
		t.Fatal("a real subject refused")
	}
	msg := contentPush("msg_long", 20000)
	if d := f.send(t, apple.Subscribe(), msg); d.Outcome != push.OutcomeDelivered || d.Chunks != 0 || !d.Cut || len(d.Attempts) != 1 {
		t.Errorf("Apple device: %+v", d)
	}
	if d := f.send(t, f.ps.Subscribe(), msg); d.Outcome != push.OutcomeDelivered || d.Chunks < 2 || d.Cut {
		t.Errorf("Chromium device: %+v", d)
	}
	msgs := apple.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages to Apple, want 1", len(msgs))
	}
	checkCutPush(t, msgs[0], msg)
	f.noErrors(t)
	if errs := apple.Errors(); len(errs) != 0 {
		t.Error(errs)
	}
}

// checkCutPush checks the one push an Apple device got for msg: within
// the budget, sent as content, its message a prefix of msg's ending in
// the ellipsis, and _truncated naming the whole push.
func checkCutPush(t *testing.T, m pushtest.Message, msg Message) {
	t.Helper()
	if len(m.Plaintext) > push.MaxPayloadBytes || len(m.Body) > push.MaxEncryptedBytes {
		t.Errorf("%d bytes of push, %d of body", len(m.Plaintext), len(m.Body))
	}
	if m.Urgency != "high" || m.Topic != TopicOf("msg_long") || m.TTL != 600 {
		t.Errorf("Urgency %q Topic %q TTL %d", m.Urgency, m.Topic, m.TTL)
	}
	var got struct {
		MessageKind string `json:"messageKind"`
		MessageID   string `json:"messageId"`
		Message     string `json:"message"`
		Truncated   struct {
			MessageID string `json:"messageId"`
			Bytes     int    `json:"bytes"`
		} `json:"_truncated"`
	}
	if err := json.Unmarshal(m.Plaintext, &got); err != nil {
		t.Fatal(err)
	}
	var orig struct{ Message string }
	if err := json.Unmarshal(msg.Payload, &orig); err != nil {
		t.Fatal(err)
	}
	cut, ok := strings.CutSuffix(got.Message, ellipsis)
	if got.MessageKind != "content" || got.MessageID != "msg_long" || !ok || !strings.HasPrefix(orig.Message, cut) ||
		len(cut) < 3000 || !utf8.ValidString(cut) {
		t.Errorf("cut push %.200s…", m.Plaintext)
	}
	if got.Truncated.MessageID != "msg_long" || got.Truncated.Bytes != len(msg.Payload) {
		t.Errorf("_truncated %+v, want msg_long and %d bytes", got.Truncated, len(msg.Payload))
	}
}

// TestCutContent: the longest prefix that fits, at a character boundary,
// through JSON escapes, with a notification body cut alike; only content
// pushes are cut.
func TestCutContent(t *testing.T) {
	text := strings.Repeat("寿\"\n🍣a", 400)
	payload, err := push.Encode(&push.ContentPush{
		Common:  push.Common{MessageID: "msg_cut", Notification: &push.Notification{Body: push.Some(text)}},
		Message: text,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{300, 301, 302, 303, 1000, 2500} {
		out, err := cutContent(payload, "msg_cut", budget)
		if err != nil {
			t.Fatal(err)
		}
		p, err := push.Decode(out)
		if err != nil {
			t.Fatal(err)
		}
		c := p.(*push.ContentPush)
		body, _ := c.Notification.Body.Get()
		cut, ok := strings.CutSuffix(c.Message, ellipsis)
		if len(out) > budget || !ok || !strings.HasPrefix(text, cut) || body != c.Message {
			t.Errorf("budget %d: %d bytes, message %q, body %q", budget, len(out), c.Message, body)
		}
		// One more character would not fit.
		next := text[len(cut):]
		_, size := utf8.DecodeRuneInString(next)
		c.Message = text[:len(cut)+size] + ellipsis
		c.Notification.Body = push.Some(c.Message)
		if grown, err := push.Encode(c); err != nil || len(grown) <= budget {
			t.Errorf("budget %d: a cut one character longer is %d bytes and fits; the cut is not the longest", budget, len(grown))
		}
	}
	reasoning := []byte(`{"messageKind":"reasoning","messageId":"m","reasoningContent":"x"}`)
	if _, err := cutContent(reasoning, "m", 3993); err == nil {
		t.Error("a reasoning push was cut")
	}
	if _, err := cutContent(payload, "msg_cut", 50); err == nil {
		t.Error("a budget below the empty push's size did not fail")
	}
}

// FuzzCompletedFromOutbox checks the shortcut that spares most endpoints
// the parse: it answers as parsing every endpoint would.
func FuzzCompletedFromOutbox(f *testing.F) {
	for _, seed := range []string{
		"https://web.push.apple.com/QGuQyavXutnMH", "https://WEB.Push.Apple.COM./x", "https://push.apple.com:443/x",
		"https://fcm.googleapis.com/fcm/send/abc", "https://push%2eapple.com/x", "https://evil.example/push.apple.com",
		"https://push.apple.com.evil.example/x", "https://user@web.push.apple.com/x", "https://[::1]/x", "push.apple.com",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, endpoint string) {
		u, err := url.Parse(endpoint)
		want := err == nil && isApplePushHost(u.Hostname())
		if got := CompletedFromOutbox(endpoint); got != want {
			t.Fatalf("CompletedFromOutbox(%q) = %v, parsing says %v", endpoint, got, want)
		}
	})
}
