package webpush

import (
	"net/http"
	"strings"
	"testing"
)

// Warm opens one HTTP/2 connection to a push service ahead of its pushes,
// which go on it; an endpoint that is not https, or that the push would
// refuse, is left alone.
func TestWarmOpensTheConnectionThePushUses(t *testing.T) {
	f := newFixture(t)
	sub := f.ps.Subscribe()
	for range 2 {
		if !f.sender.Warm(t.Context(), sub.Endpoint) {
			t.Fatal("Warm reported no connection open to the push service")
		}
	}
	if n := f.sender.h2.Conns(); n != 1 {
		t.Fatalf("%d connections after two Warms, want 1", n)
	}
	if d := f.send(t, sub, contentPush("msg_w", 100)); d.Outcome != "delivered" || d.Status != http.StatusCreated {
		t.Fatalf("push after Warm: %+v", d)
	}
	if n := f.sender.h2.Conns(); n != 1 {
		t.Errorf("%d connections after the push, want the warmed one", n)
	}
	if f.sender.Warm(t.Context(), "http://127.0.0.1:1/push/x") {
		t.Error("Warm reported a connection to an http endpoint")
	}
	withCredentials := strings.Replace(sub.Endpoint, "https://", "https://user:secret@", 1)
	if f.sender.Warm(t.Context(), withCredentials) {
		t.Error("Warm took an endpoint the push refuses (credentials in it)")
	}
}
