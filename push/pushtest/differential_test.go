package pushtest_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"amsg/push"
	"amsg/push/webpush"
)

// TestSenderMatchesWebpushGo is the differential test of amsg's sender:
// the same payloads sent by it and by webpush-go, an independent
// implementation of RFC 8291 and 8292, to the same subscriptions decrypt
// here to the same bytes, and both senders' tokens verify.
func TestSenderMatchesWebpushGo(t *testing.T) {
	s, pub, priv := newServer(t)
	sender, err := webpush.NewSender(webpush.Config{VAPIDPublicKey: pub, VAPIDPrivateKey: priv,
		Subject: "ops@example.org", AllowPrivateEndpoints: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	payloads := [][]byte{
		[]byte(`{"messageKind":"content","message":""}`),
		[]byte(`{"messageKind":"content","message":"` + strings.Repeat("寿司 🍣 \\u0000 ", 100) + `"}`),
		bytes.Repeat([]byte{0}, 64),
		bytes.Repeat([]byte{0xff}, push.MaxPayloadBytes),
	}
	subs := []push.Subscription{s.Subscribe(), s.Subscribe()}
	for _, sub := range subs {
		for _, p := range payloads {
			d, err := sender.Send(context.Background(), sub, webpush.Message{ID: "msg_diff", Kind: push.KindContent,
				Payload: p, Source: push.SourceInstant})
			if err != nil || d.Outcome != push.OutcomeDelivered {
				t.Fatalf("amsg: %+v, %v (errors %v)", d, err, s.Errors())
			}
			if status := send(t, sub, bytes.Clone(p), pub, priv, "ops@example.org", uint32(len(p)+push.EncryptionOverhead)); status != 201 {
				t.Fatalf("webpush-go: status %d (errors %v)", status, s.Errors())
			}
		}
	}
	reqs := s.Requests()
	if len(reqs) != 2*len(subs)*len(payloads) {
		t.Fatalf("%d requests", len(reqs))
	}
	for i := 0; i < len(reqs); i += 2 {
		ours, theirs, want := reqs[i], reqs[i+1], payloads[(i/2)%len(payloads)]
		if ours.Endpoint != theirs.Endpoint || !bytes.Equal(ours.Plaintext, theirs.Plaintext) || !bytes.Equal(ours.Plaintext, want) {
			t.Errorf("request %d: amsg decrypts to %d bytes, webpush-go to %d, sent %d", i, len(ours.Plaintext), len(theirs.Plaintext), len(want))
		}
		if len(ours.Body) != len(theirs.Body) {
			t.Errorf("request %d: amsg body %d bytes, webpush-go's %d", i, len(ours.Body), len(theirs.Body))
		}
	}
	if errs := s.Errors(); len(errs) != 0 {
		t.Error(errs)
	}
}
