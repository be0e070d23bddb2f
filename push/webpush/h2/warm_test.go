package h2

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// TestWarmOpensOneConnectionTheRequestUses: Warm dials the origin once,
// a second Warm dials nothing, and the request after them goes on the
// connection Warm opened.
func TestWarmOpensOneConnectionTheRequestUses(t *testing.T) {
	srv, pool := goServer(t, nil, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
	var dials atomic.Int32
	c := newTestClient(t, pool, Config{Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}})
	for range 2 {
		if open, err := c.Warm(t.Context(), authority(srv)); !open || err != nil {
			t.Fatalf("Warm: open %v, %v", open, err)
		}
	}
	if n, d := c.Conns(), dials.Load(); n != 1 || d != 1 {
		t.Fatalf("after two Warms: %d connections, %d dials; want 1 and 1", n, d)
	}
	req := post("hello")
	req.Authority = authority(srv)
	if resp, err := c.Do(t.Context(), req); err != nil || resp.Status != http.StatusCreated {
		t.Fatalf("%+v, %v", resp, err)
	}
	if d := dials.Load(); d != 1 {
		t.Errorf("%d dials, want the request on the warmed connection", d)
	}
}
