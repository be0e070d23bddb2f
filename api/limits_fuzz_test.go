package api

import (
	"net/http"
	"net/netip"
	"testing"
)

// clientAddress reads X-Forwarded-For, outside input: it never panics, and
// the address it returns is the peer or one of the header's hops.
func FuzzClientAddress(f *testing.F) {
	for _, seed := range []string{"", "203.0.113.9", "1.1.1.1, 203.0.113.9, 10.0.0.1", "garbage,,", "::1, fe80::1%eth0", "[::1]:80"} {
		f.Add(seed)
	}
	proxies, _ := ParseTrustedProxies("10.0.0.0/8,127.0.0.1")
	f.Fuzz(func(t *testing.T, xff string) {
		req := &http.Request{RemoteAddr: "127.0.0.1:1234", Header: http.Header{"X-Forwarded-For": {xff}}}
		got := clientAddress(req, proxies)
		if !got.IsValid() {
			t.Fatalf("no address for %q", xff)
		}
		if got != netip.MustParseAddr("127.0.0.1") && !containsHop(xff, got) {
			t.Fatalf("%s is neither the peer nor a hop of %q", got, xff)
		}
	})
}

func containsHop(xff string, addr netip.Addr) bool {
	for _, h := range splitHops(xff) {
		if a, err := netip.ParseAddr(h); err == nil && a.Unmap() == addr {
			return true
		}
	}
	return false
}
