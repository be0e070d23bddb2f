package webpush

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/netguard"
)

func validKeys(t testing.TB) push.SubscriptionKeys {
	t.Helper()
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	return push.SubscriptionKeys{
		P256dh: base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes()),
		Auth:   base64.RawURLEncoding.EncodeToString(auth),
	}
}

func TestCheckKeys(t *testing.T) {
	good := validKeys(t)
	p, _ := base64.RawURLEncoding.DecodeString(good.P256dh)
	a, _ := base64.RawURLEncoding.DecodeString(good.Auth)
	offCurve := bytes.Clone(p)
	offCurve[64] ^= 1
	compressed := append([]byte{2 + p[64]&1}, p[1:33]...)
	tests := []struct {
		name      string
		keys      push.SubscriptionKeys
		wantField string // "" means valid
		wantText  string
	}{
		{"base64url unpadded", good, "", ""},
		{"base64url padded", push.SubscriptionKeys{P256dh: base64.URLEncoding.EncodeToString(p), Auth: base64.URLEncoding.EncodeToString(a)}, "", ""},
		{"standard padded", push.SubscriptionKeys{P256dh: base64.StdEncoding.EncodeToString(p), Auth: base64.StdEncoding.EncodeToString(a)}, "", ""},
		{"standard unpadded", push.SubscriptionKeys{P256dh: base64.RawStdEncoding.EncodeToString(p), Auth: base64.RawStdEncoding.EncodeToString(a)}, "", ""},
		{"p256dh missing", push.SubscriptionKeys{Auth: good.Auth}, "keys.p256dh", "missing"},
		{"p256dh not base64", push.SubscriptionKeys{P256dh: "not base64!", Auth: good.Auth}, "keys.p256dh", "not base64url"},
		{"p256dh mixed alphabets", push.SubscriptionKeys{P256dh: "ab-+" + good.P256dh[4:], Auth: good.Auth}, "keys.p256dh", "not base64url"},
		{"p256dh compressed", push.SubscriptionKeys{P256dh: base64.RawURLEncoding.EncodeToString(compressed), Auth: good.Auth}, "keys.p256dh", "65-byte uncompressed"},
		{"p256dh off the curve", push.SubscriptionKeys{P256dh: base64.RawURLEncoding.EncodeToString(offCurve), Auth: good.Auth}, "keys.p256dh", "on the P-256 curve"},
		{"p256dh far too long", push.SubscriptionKeys{P256dh: strings.Repeat("A", 10000), Auth: good.Auth}, "keys.p256dh", "not base64url"},
		{"auth missing", push.SubscriptionKeys{P256dh: good.P256dh}, "keys.auth", "missing"},
		{"auth 12 bytes", push.SubscriptionKeys{P256dh: good.P256dh, Auth: base64.RawURLEncoding.EncodeToString(a[:12])}, "keys.auth", "16 bytes (got 12)"},
		{"auth not base64", push.SubscriptionKeys{P256dh: good.P256dh, Auth: "%%%"}, "keys.auth", "not base64url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckKeys(tt.keys)
			if tt.wantField == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ie *InvalidSubscriptionError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidSubscription) {
				t.Fatalf("err = %v, want an *InvalidSubscriptionError", err)
			}
			if ie.Field != tt.wantField || !strings.Contains(ie.Reason, tt.wantText) {
				t.Errorf("got %s: %s; want %s: …%s…", ie.Field, ie.Reason, tt.wantField, tt.wantText)
			}
		})
	}
}

func TestCheckEndpoint(t *testing.T) {
	resolver := netguard.MapResolver{
		"fcm.googleapis.com":    {"142.250.74.106", "2a00:1450:4001:82a::200a"},
		"updates.push.services": {"34.117.35.28"},
		"rebind.example.org":    {"34.117.35.28", "10.0.0.7"},
		"cgnat.example.org":     {"100.100.1.1"},
		"ula.example.org":       {"fd12:3456::1"},
		"mapped.example.org":    {"::ffff:127.0.0.1"},
		"nat64.example.org":     {"64:ff9b::a00:1"},
		"empty.example.org":     {},
	}
	strict := EndpointPolicy{Resolver: resolver}
	open := EndpointPolicy{AllowPrivate: true, Resolver: resolver}
	tests := []struct {
		endpoint string
		policy   EndpointPolicy
		want     string // substring of the reason; "" means accepted
	}{
		{"https://fcm.googleapis.com/fcm/send/abc", strict, ""},
		{"https://updates.push.services/wpush/v2/abc", strict, ""},
		{"https://FCM.googleapis.com./fcm/send/abc", strict, ""},
		{"https://fcm.googleapis.com:443/fcm/send/abc", strict, ""},
		{"https://142.250.74.106/push", strict, ""},
		{"", strict, "is missing"},
		{"https://fcm.googleapis.com/" + strings.Repeat("a", 2100), strict, "longer than 2048"},
		{"http://fcm.googleapis.com/fcm/send/abc", strict, "must be an https URL"},
		{"ftp://fcm.googleapis.com/x", strict, "must be an https URL"},
		{"fcm.googleapis.com/fcm/send/abc", strict, "must be an https URL"},
		{"https:opaque", strict, "not a URL"},
		{"https://user:pw@fcm.googleapis.com/x", strict, "credentials"},
		{"https:///path", strict, "no host"},
		{"https://fcm.googleapis.com:8443/x", strict, "default https port"},
		{"https://localhost/x", strict, "is local"},
		{"https://push.localhost/x", strict, "is local"},
		{"https://push.example.invalid/x", strict, ".invalid"},
		{"https://push.example.invalid/x", open, ".invalid"},
		{"https://127.0.0.1/x", strict, "loopback"},
		{"https://[::1]/x", strict, "loopback"},
		{"https://10.1.2.3/x", strict, "private"},
		{"https://172.20.0.1/x", strict, "private"},
		{"https://192.168.1.1/x", strict, "private"},
		{"https://169.254.169.254/latest/meta-data", strict, "link-local"},
		{"https://[fe80::1%25eth0]/x", strict, "link-local"},
		{"https://0.0.0.0/x", strict, "unspecified"},
		{"https://224.0.0.1/x", strict, "multicast"},
		{"https://100.64.0.1/x", strict, "carrier-grade NAT"},
		{"https://cgnat.example.org/x", strict, "carrier-grade NAT"},
		{"https://ula.example.org/x", strict, "private"},
		{"https://mapped.example.org/x", strict, "127.0.0.1, a loopback"},
		{"https://nat64.example.org/x", strict, "NAT64 address of a private"},
		{"https://[2002:a00:1::]/x", strict, "6to4 address of a private"},
		{"https://rebind.example.org/x", strict, "10.0.0.7, a private"},
		{"https://nowhere.example.org/x", strict, "does not resolve"},
		{"https://empty.example.org/x", strict, "does not resolve"},
		{"http://127.0.0.1:8080/push/abc", open, ""},
		{"http://localhost:8080/push/abc", open, ""},
		{"https://10.0.0.5/x", open, ""},
	}
	for _, tt := range tests {
		err := tt.policy.CheckEndpoint(context.Background(), tt.endpoint)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s (allow private %v): %v", tt.endpoint, tt.policy.AllowPrivate, err)
			}
			continue
		}
		var ie *InvalidSubscriptionError
		if !errors.As(err, &ie) || ie.Field != "endpoint" || !strings.Contains(ie.Reason, tt.want) {
			t.Errorf("%.60s (allow private %v): err = %v, want endpoint …%s…", tt.endpoint, tt.policy.AllowPrivate, err, tt.want)
		}
	}
}

func TestCheckSubscription(t *testing.T) {
	p := EndpointPolicy{Resolver: netguard.MapResolver{"fcm.googleapis.com": {"142.250.74.106"}}}
	sub := push.Subscription{Endpoint: "https://fcm.googleapis.com/fcm/send/abc", Keys: validKeys(t)}
	if err := p.CheckSubscription(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	sub.Keys.Auth = ""
	if err := p.CheckSubscription(context.Background(), sub); err == nil || !strings.Contains(err.Error(), "keys.auth is missing") {
		t.Errorf("err = %v", err)
	}
}

// TestDialRefusesPrivateAddress shows the sender's own transport checks the
// address it connects to, whatever the name resolved to when it was stored.
func TestDialRefusesPrivateAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()

	cfg := Config{Timeout: 5 * time.Second, MaxConnsPerHost: 4}
	strict := &http.Client{Transport: newTransport(EndpointPolicy{}, cfg)}
	_, err := strict.Post(srv.URL, "application/octet-stream", nil)
	if !errors.Is(err, ErrRefusedAddress) || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("strict client reached %s: err = %v", srv.URL, err)
	}
	// A name a resolver points at loopback is refused at the dial too.
	cfg.Resolver = netguard.MapResolver{"push.example.net": {"127.0.0.1"}}
	named := strings.Replace(srv.URL, "127.0.0.1", "push.example.net", 1)
	if _, err := (&http.Client{Transport: newTransport(EndpointPolicy{}, cfg)}).Post(named, "application/octet-stream", nil); !errors.Is(err, ErrRefusedAddress) {
		t.Errorf("strict client with a resolver reached %s: err = %v", named, err)
	}
	open := &http.Client{Transport: newTransport(EndpointPolicy{AllowPrivate: true}, cfg)}
	resp, err := open.Post(srv.URL, "application/octet-stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("status %d", resp.StatusCode)
	}
}

func FuzzDecodeKey(f *testing.F) {
	for _, s := range []string{"BTBZMqHH6r4Tts7J_aSIgg", "BTBZMqHH6r4Tts7J/aSIgg==", "", "=", "a", "ab-+", "\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := decodeKey(s)
		if err != nil {
			return
		}
		// Whatever decodes is the bytes of one of the four spellings.
		again, err := decodeKey(base64.RawURLEncoding.EncodeToString(b))
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("%q decoded to %x, which does not round-trip", s, b)
		}
		if len(s) > maxKeyChars {
			t.Fatalf("accepted %d characters", len(s))
		}
	})
}

func FuzzCheckKeys(f *testing.F) {
	good := validKeys(f)
	f.Add(good.P256dh, good.Auth)
	f.Add("", "")
	f.Add("BAAA", "AAAA")
	f.Fuzz(func(t *testing.T, p256dh, auth string) {
		err := CheckKeys(push.SubscriptionKeys{P256dh: p256dh, Auth: auth})
		if err == nil {
			p, _ := decodeKey(p256dh)
			a, _ := decodeKey(auth)
			if len(p) != 65 || len(a) != 16 {
				t.Fatalf("accepted keys of %d and %d bytes", len(p), len(a))
			}
		} else if !errors.Is(err, ErrInvalidSubscription) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

func FuzzCheckEndpoint(f *testing.F) {
	for _, s := range []string{"https://fcm.googleapis.com/fcm/send/abc", "http://127.0.0.1:8080/x", "https://[::1]/", "https://a.invalid", "%", "https://x:99999/"} {
		f.Add(s)
	}
	public := netguard.MapResolver{"fcm.googleapis.com": {"142.250.74.106"}}
	f.Fuzz(func(t *testing.T, endpoint string) {
		err := EndpointPolicy{Resolver: public}.CheckEndpoint(context.Background(), endpoint)
		if err != nil && !errors.Is(err, ErrInvalidSubscription) {
			t.Fatalf("untyped error %v", err)
		}
		if err == nil && !strings.HasPrefix(endpoint, "https://") && !strings.HasPrefix(strings.ToLower(endpoint), "https:") {
			t.Fatalf("accepted %q", endpoint)
		}
	})
}
