package webpush

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"amsg/push"
)

// TestPushGoesThroughTheH2Client: a push to a push service that speaks h2
// goes through the sender's own client (one connection, kept), and the
// push service verifies its VAPID token and decrypts it; with NetHTTPOnly
// it goes through net/http and arrives the same.
func TestPushGoesThroughTheH2Client(t *testing.T) {
	for _, netHTTPOnly := range []bool{false, true} {
		f := newFixture(t, func(c *Config) { c.NetHTTPOnly = netHTTPOnly })
		sub := f.ps.Subscribe()
		for i := range 3 {
			msg := contentPush("msg_h2_"+string(rune('a'+i)), 300)
			if d := f.send(t, sub, msg); d.Outcome != push.OutcomeDelivered {
				t.Fatalf("NetHTTPOnly %v: %+v", netHTTPOnly, d)
			}
		}
		f.noErrors(t)
		if got := f.ps.Messages(); len(got) != 3 || !bytes.Equal(got[2].Plaintext, contentPush("msg_h2_c", 300).Payload) ||
			got[2].TTL != 600 || got[2].Urgency != "high" || got[2].Topic != TopicOf("msg_h2_c") {
			t.Errorf("NetHTTPOnly %v: the push service decrypted %d pushes", netHTTPOnly, len(got))
		}
		switch {
		case netHTTPOnly && f.sender.h2 != nil:
			t.Error("NetHTTPOnly built an h2 client")
		case !netHTTPOnly && f.sender.h2.Conns() != 1:
			t.Errorf("%d h2 connections, want the one kept", f.sender.h2.Conns())
		}
	}
}

// TestHTTP1PushServiceGoesThroughNetHTTP: a push service that negotiates
// no h2 still gets its pushes, over HTTP/1.1 through net/http.
func TestHTTP1PushServiceGoesThroughNetHTTP(t *testing.T) {
	var protos atomic.Int32 // requests that arrived over anything but HTTP/1.1
	var requests atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.ProtoMajor != 1 {
			protos.Add(1)
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	f := newFixture(t, func(c *Config) { c.RootCAs.AddCert(srv.Certificate()) })
	sub := f.ps.Subscribe()
	sub.Endpoint = srv.URL + "/push/1"
	for range 2 {
		if d := f.send(t, sub, contentPush("msg_http1", 100)); d.Outcome != push.OutcomeDelivered {
			t.Fatalf("%+v", d)
		}
	}
	if requests.Load() != 2 || protos.Load() != 0 || f.sender.h2.Conns() != 0 {
		t.Errorf("%d requests, %d not over HTTP/1.1, %d h2 connections", requests.Load(), protos.Load(), f.sender.h2.Conns())
	}
}
