package webpush

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/pushtest"
)

// TestSealRFC8291Example: with the RFC's salt and ephemeral key, our
// encryption produces the body of RFC 8291 §5 byte for byte.
func TestSealRFC8291Example(t *testing.T) {
	ex := pushtest.RFC8291Example
	dec := func(s string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	keys, err := parseKeys(push.SubscriptionKeys{P256dh: ex.UAPublic, Auth: ex.Auth})
	if err != nil {
		t.Fatal(err)
	}
	as, err := ecdh.P256().NewPrivateKey(dec(ex.ASPrivate))
	if err != nil {
		t.Fatal(err)
	}
	body, err := seal([]byte(ex.Plaintext), keys, as, dec(ex.Salt), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := base64.RawURLEncoding.EncodeToString(body); got != ex.Body {
		t.Errorf("body\n%s\nwant the RFC's\n%s", got, ex.Body)
	}
}

// jwtClaims decodes the claims of a recorded `vapid t=…, k=…` header.
func jwtClaims(t *testing.T, header string) (aud string, exp time.Time) {
	t.Helper()
	token, _, _ := strings.Cut(strings.TrimPrefix(header, "vapid t="), ",")
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", header)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c.Aud, time.Unix(c.Exp, 0)
}

// TestVAPIDTokenPerOrigin reads the Authorization headers pushtest
// recorded: one token for two pushes to one origin, another for another
// origin, a new one once less than an hour is left, and none valid for more
// than 24 hours after the push that carried it.
func TestVAPIDTokenPerOrigin(t *testing.T) {
	f := newFixture(t)
	other := pushtest.NewServer(f.sender.signer.keyPart[len(", k="):])
	t.Cleanup(other.Close)
	a, b := f.ps.Subscribe(), other.Subscribe()
	var sentAt []time.Time // the sender's clock at each push, in order
	sendTo := func(sub push.Subscription) pushtest.Message {
		t.Helper()
		sentAt = append(sentAt, f.now)
		d, err := f.sender.Send(context.Background(), sub, contentPush("msg_jwt", 10))
		if err != nil || d.Outcome != push.OutcomeDelivered {
			t.Fatalf("%+v, %v", d, err)
		}
		ps := f.ps
		if sub.Endpoint == b.Endpoint {
			ps = other
		}
		msgs := ps.Requests()
		return msgs[len(msgs)-1]
	}
	first := sendTo(a)
	f.now = f.now.Add(10 * time.Hour)
	second := sendTo(a) // two hours left: reused
	third := sendTo(b)
	f.now = f.now.Add(time.Hour + time.Second)
	fourth := sendTo(a) // 59 minutes left: signed anew
	fifth := sendTo(a)

	if first.Authorization == "" || second.Authorization != first.Authorization {
		t.Errorf("a second push to the same origin signed a new token:\n%s\n%s", first.Authorization, second.Authorization)
	}
	if third.Authorization == first.Authorization {
		t.Error("another origin got the same token")
	}
	if aud, _ := jwtClaims(t, third.Authorization); aud != other.URL {
		t.Errorf("aud %q, want %q", aud, other.URL)
	}
	if fourth.Authorization == first.Authorization || fifth.Authorization != fourth.Authorization {
		t.Error("the token was not renewed once, an hour before its expiry")
	}
	for i, m := range []pushtest.Message{first, second, third, fourth, fifth} {
		_, exp := jwtClaims(t, m.Authorization)
		if ahead := exp.Sub(sentAt[i]); ahead <= 0 || ahead > 24*time.Hour {
			t.Errorf("push %d: exp %s ahead of its send", i+1, ahead)
		}
	}
	if _, exp := jwtClaims(t, fourth.Authorization); exp.Sub(sentAt[3]) != tokenLifetime {
		t.Errorf("renewed token expires %s after its push, want %s", exp.Sub(sentAt[3]), tokenLifetime)
	}
	f.noErrors(t)
	if errs := other.Errors(); len(errs) != 0 {
		t.Error(errs)
	}
}

// TestVAPIDTokenNeverBeyond24Hours: a token cached under a clock that then
// jumps back is re-signed rather than sent more than 24 hours early.
func TestVAPIDTokenNeverBeyond24Hours(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pub, priv, err := GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	v, err := newVAPIDSigner(pub, priv, "mailto:ops@example.org", func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	h1, err := v.header("https://push.example.net")
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(-13 * time.Hour)
	h2, err := v.header("https://push.example.net")
	if err != nil {
		t.Fatal(err)
	}
	if _, exp := jwtClaims(t, h2); h2 == h1 || exp.Sub(now) > 24*time.Hour {
		t.Errorf("after the clock went back 13 h the token expires %s ahead", exp.Sub(now))
	}
}

// TestSealSizes: bodies are the payload plus 103 bytes unless padded, and
// decrypt in pushtest whatever the payload's size, up to the budget.
func TestSealSizes(t *testing.T) {
	f := newFixture(t)
	sub := f.ps.Subscribe()
	for _, n := range []int{0, 1, 15, 16, 17, 1000, push.MaxPayloadBytes} {
		payload := bytes.Repeat([]byte{'x'}, n)
		if _, err := f.sender.Send(context.Background(), sub, Message{ID: "msg_size", Kind: push.KindContent,
			Payload: payload, Source: push.SourceInstant}); err != nil {
			t.Fatal(err)
		}
		msgs := f.ps.Requests()
		m := msgs[len(msgs)-1]
		if len(m.Body) != n+push.EncryptionOverhead || !bytes.Equal(m.Plaintext, payload) {
			t.Errorf("%d bytes: body %d, plaintext equal %v", n, len(m.Body), bytes.Equal(m.Plaintext, payload))
		}
	}
	f.noErrors(t)
}

func TestOriginOf(t *testing.T) {
	for raw, want := range map[string]string{
		"https://fcm.googleapis.com/fcm/send/x":     "https://fcm.googleapis.com",
		"https://Web.Push.Apple.com:443/QGx":        "https://web.push.apple.com",
		"https://updates.push.services.mozilla.com": "https://updates.push.services.mozilla.com",
		"http://127.0.0.1:8080/push/a":              "http://127.0.0.1:8080",
		"http://[::1]:80/push/a":                    "http://[::1]",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := originOf(u); got != want {
			t.Errorf("originOf(%s) = %s, want %s", raw, got, want)
		}
	}
}
