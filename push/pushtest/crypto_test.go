package pushtest

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func b64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rfc8291Keys(t *testing.T) (*ecdh.PrivateKey, []byte) {
	key, err := ecdh.P256().NewPrivateKey(b64(t, RFC8291Example.UAPrivate))
	if err != nil {
		t.Fatal(err)
	}
	if got := base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes()); got != RFC8291Example.UAPublic {
		t.Fatalf("ua_public %s, want the RFC's %s", got, RFC8291Example.UAPublic)
	}
	return key, b64(t, RFC8291Example.Auth)
}

func TestDecryptRFC8291Example(t *testing.T) {
	key, auth := rfc8291Keys(t)
	plaintext, rs, err := decrypt(b64(t, RFC8291Example.Body), key, auth)
	if err != nil {
		t.Fatal(err)
	}
	if string(plaintext) != RFC8291Example.Plaintext || rs != RFC8291Example.RecordSize {
		t.Errorf("got %q with rs %d", plaintext, rs)
	}
}

func TestDecryptRefusesBadBodies(t *testing.T) {
	key, auth := rfc8291Keys(t)
	tests := []struct {
		name   string
		mutate func([]byte) []byte
		want   string
	}{
		{"flipped ciphertext bit", func(b []byte) []byte { b[len(b)-20] ^= 1; return b }, "authentication failed"},
		{"wrong salt", func(b []byte) []byte { b[0] ^= 1; return b }, "authentication failed"},
		{"two records", func(b []byte) []byte { b[16], b[17], b[18], b[19] = 0, 0, 0, 20; return b }, "more than one"},
		{"record size too small", func(b []byte) []byte { b[16], b[17], b[18], b[19] = 0, 0, 0, 17; return b }, "below 18"},
		{"short key id", func(b []byte) []byte { b[20] = 64; return b }, "key id"},
		{"truncated header", func(b []byte) []byte { return b[:20] }, "shorter than"},
		{"tag only", func(b []byte) []byte { return b[:86+10] }, "shorter than a tag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := decrypt(tt.mutate(b64(t, RFC8291Example.Body)), key, auth)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
	other := make([]byte, 16)
	if _, _, err := decrypt(b64(t, RFC8291Example.Body), key, other); err == nil {
		t.Error("decrypted with the wrong auth secret")
	}
}

// RFC 8292 §2.4: the example token, signed by the example key.
const (
	rfc8292Token = "eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9." +
		"eyJhdWQiOiJodHRwczovL3B1c2guZXhhbXBsZS5uZXQiLCJleHAiOjE0NTM1MjM3NjgsInN1YiI6Im1haWx0bzpwdXNoQGV4YW1wbGUuY29tIn0." +
		"i3CYb7t4xfxCDquptFOepC9GAu_HLGkMlMuCGSK2rpiUfnK9ojFwDXb1JrErtmysazNjjvW2L9OkSSHzvoD1oA"
	rfc8292Key = "BA1Hxzyi1RUM1b5wjxsn7nGxAszw2u61m164i3MrAIxHF6YK5h4SDYic-dRuU_RCPCfA5aq9ojSwk5Y2EmClBPs"
)

func TestVerifyVAPIDRFC8292Example(t *testing.T) {
	key := b64(t, rfc8292Key)
	exp := time.Unix(1453523768, 0)
	header := "vapid t=" + rfc8292Token + ", k=" + rfc8292Key
	if err := verifyVAPID(header, key, "https://push.example.net", exp.Add(-time.Hour)); err != nil {
		t.Fatalf("the RFC's token does not verify: %v", err)
	}
	tests := []struct {
		name   string
		header string
		origin string
		now    time.Time
		want   string
	}{
		{"expired", header, "https://push.example.net", exp, "exp"},
		{"valid for over a day", header, "https://push.example.net", exp.Add(-25 * time.Hour), "24 hours"},
		{"other audience", header, "https://push.example.org", exp.Add(-time.Hour), "aud"},
		{"other key", "vapid t=" + rfc8292Token + ", k=" + RFC8291Example.UAPublic, "https://push.example.net", exp.Add(-time.Hour), "k="},
		{"forged signature", "vapid t=" + rfc8292Token[:len(rfc8292Token)-2] + "AA, k=" + rfc8292Key, "https://push.example.net", exp.Add(-time.Hour), "signature"},
		{"legacy scheme", "WebPush " + rfc8292Token, "https://push.example.net", exp.Add(-time.Hour), "scheme"},
		{"no token", "vapid k=" + rfc8292Key, "https://push.example.net", exp.Add(-time.Hour), "three parts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verifyVAPID(tt.header, key, tt.origin, tt.now)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one about %q", err, tt.want)
			}
		})
	}
}

// signToken makes an ES256 token with the given header and claims.
func signToken(t *testing.T, key *ecdsa.PrivateKey, header string, claims map[string]any) string {
	t.Helper()
	body, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	input := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString(body)
	digest := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func TestVerifyVAPIDClaims(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := key.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	const origin = "http://127.0.0.1:1234"
	es256 := `{"typ":"JWT","alg":"ES256"}`
	good := map[string]any{"aud": origin, "exp": now.Add(12 * time.Hour).Unix(), "sub": "mailto:ops@example.org"}
	with := func(k string, v any) map[string]any {
		c := map[string]any{}
		for kk, vv := range good {
			c[kk] = vv
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	tests := []struct {
		name   string
		header string
		claims map[string]any
		want   string // "" means valid
	}{
		{"valid mailto", es256, good, ""},
		{"valid https subject", es256, with("sub", "https://amsg.example.org/contact"), ""},
		{"no sub", es256, with("sub", nil), "sub is missing"},
		{"double mailto", es256, with("sub", "mailto:mailto:ops@example.org"), "not a mailto"},
		{"bare address", es256, with("sub", "ops@example.org"), "not a mailto"},
		{"no exp", es256, with("exp", nil), "exp"},
		{"exp as string", es256, with("exp", "soon"), "exp"},
		{"alg none", `{"alg":"none"}`, good, "ES256"},
		{"aud with path", es256, with("aud", origin+"/push"), "aud"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := "vapid t=" + signToken(t, key, tt.header, tt.claims) + ", k=" + base64.RawURLEncoding.EncodeToString(pub)
			err := verifyVAPID(header, pub, origin, now)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one about %q", err, tt.want)
			}
		})
	}
}

// TestTokenCache: a token that verified is not checked again until its
// exp, and then fails as any expired token does; a failed one is never
// cached.
func TestTokenCache(t *testing.T) {
	key := b64(t, rfc8292Key)
	exp := time.Unix(1453523768, 0)
	header := "vapid t=" + rfc8292Token + ", k=" + rfc8292Key
	var c tokenCache
	if err := c.verify(header, key, "https://push.example.org", exp.Add(-time.Hour)); err == nil {
		t.Fatal("a token for another audience verified")
	}
	if len(c.verified) != 0 {
		t.Error("a refused token was cached")
	}
	if err := c.verify(header, key, "https://push.example.net", exp.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.verified[header]; !ok {
		t.Error("a verified token was not cached")
	}
	if err := c.verify(header, key, "https://push.example.net", exp); err == nil || !strings.Contains(err.Error(), "exp") {
		t.Errorf("a cached token past its exp: err = %v", err)
	}
}
