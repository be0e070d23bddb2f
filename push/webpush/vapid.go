package webpush

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"strings"
	"sync"
	"time"
)

// ErrVAPIDConfig is what every VAPID key or subject problem matches with
// errors.Is.
var ErrVAPIDConfig = errors.New("invalid VAPID configuration")

// GenerateVAPIDKeys returns a fresh VAPID key pair as unpadded base64url: the
// public key is the 65-byte uncompressed P-256 point browsers expect as
// applicationServerKey, the private key the 32-byte scalar. (webpush-go's
// function of the same name returns the two the other way round.)
func GenerateVAPIDKeys() (public, private string, err error) {
	key, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("generate VAPID key: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(key.PublicKey().Bytes()),
		base64.RawURLEncoding.EncodeToString(key.Bytes()), nil
}

// parseVAPIDKeys checks that public and private form one P-256 key pair and
// returns them re-encoded as unpadded base64url, the form the k= parameter
// takes (operators paste standard base64 too).
func parseVAPIDKeys(public, private string) (pub, priv string, err error) {
	pubBytes, err := decodeKey(public)
	if err != nil || len(pubBytes) != 65 || pubBytes[0] != 4 {
		return "", "", fmt.Errorf("%w: the public key must be a base64url 65-byte uncompressed P-256 point", ErrVAPIDConfig)
	}
	privBytes, err := decodeKey(private)
	if err != nil || len(privBytes) != 32 {
		return "", "", fmt.Errorf("%w: the private key must be a base64url 32-byte P-256 scalar", ErrVAPIDConfig)
	}
	key, err := ecdh.P256().NewPrivateKey(privBytes)
	if err != nil {
		return "", "", fmt.Errorf("%w: the private key is not a valid P-256 scalar", ErrVAPIDConfig)
	}
	if !bytes.Equal(key.PublicKey().Bytes(), pubBytes) {
		// Push services would answer 401/403 to every message.
		return "", "", fmt.Errorf("%w: the public key does not belong to the private key", ErrVAPIDConfig)
	}
	return base64.RawURLEncoding.EncodeToString(pubBytes), base64.RawURLEncoding.EncodeToString(privBytes), nil
}

// NormalizeSubject turns a configured VAPID subject into the JWT "sub" claim:
// "mailto:<address>" for an e-mail address given with or without "mailto:"
// (in any case), or an https URL. Anything else is an error, because push
// services (Apple first) refuse such tokens with 403 BadJwtToken.
func NormalizeSubject(subject string) (string, error) {
	s := strings.TrimSpace(subject)
	lower := strings.ToLower(s)
	switch {
	case s == "":
		return "", fmt.Errorf("%w: the VAPID subject is empty; set a contact e-mail address or an https URL", ErrVAPIDConfig)
	case strings.HasPrefix(lower, "https:"):
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return "", fmt.Errorf("%w: the VAPID subject %q is not an https URL with a host", ErrVAPIDConfig, s)
		}
		return "https:" + s[len("https:"):], nil
	case strings.HasPrefix(lower, "http:"):
		return "", fmt.Errorf("%w: the VAPID subject must be a mailto: address or an https: URL, not an http: URL", ErrVAPIDConfig)
	case strings.HasPrefix(lower, "mailto:"):
		s = strings.TrimSpace(s[len("mailto:"):])
	}
	if a, err := mail.ParseAddress(s); err != nil || a.Name != "" || a.Address != s {
		return "", fmt.Errorf("%w: the VAPID subject %q is neither an e-mail address nor an https URL", ErrVAPIDConfig, subject)
	}
	return "mailto:" + s, nil
}

// placeholderSubject reports a subject whose domain cannot receive mail,
// or is one of RFC 2606's example domains that sample configurations use
// (deploy/docker-compose.yml's default among them): Apple's push service
// rejects those tokens.
func placeholderSubject(sub string) bool {
	at := strings.LastIndexByte(sub, '@')
	if !strings.HasPrefix(sub, "mailto:") || at < 0 {
		return false
	}
	domain := strings.ToLower(sub[at+1:])
	for _, suffix := range []string{"localhost", ".local", ".invalid", ".test", ".example", ".example.org", ".example.com", ".example.net"} {
		if domain == strings.TrimPrefix(suffix, ".") || strings.HasSuffix(domain, suffix) {
			return true
		}
	}
	return !strings.Contains(domain, ".")
}

// VAPID token lifetimes. RFC 8292 §2 forbids an exp more than 24 hours
// after the request; 12 hours with renewal an hour before the end keeps a
// clock that runs ahead by up to 11 hours inside that limit, and §4 asks
// senders to reuse a token so the push service can cache its check.
const (
	tokenLifetime    = 12 * time.Hour
	tokenRenewBefore = time.Hour
	maxTokenLifetime = 24 * time.Hour
	// maxCachedOrigins bounds the token cache; endpoints come from users,
	// so their origins are outside input. Real push services are a handful.
	maxCachedOrigins = 1024
)

// jwtHeader is base64url({"typ":"JWT","alg":"ES256"}).
const jwtHeader = "eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9"

// vapidSigner makes the Authorization header of RFC 8292 and keeps one per
// push-service origin until it nears its expiry.
type vapidSigner struct {
	key     *ecdsa.PrivateKey // parsed once
	keyPart string            // ", k=<public key>"
	subject string            // the sub claim
	now     func() time.Time

	mu     sync.Mutex
	tokens map[string]vapidToken // by origin
}

type vapidToken struct {
	header string
	exp    time.Time
}

func newVAPIDSigner(public, private, subject string, now func() time.Time) (*vapidSigner, error) {
	raw, err := base64.RawURLEncoding.DecodeString(private)
	if err != nil {
		return nil, fmt.Errorf("%w: the private key is not base64url", ErrVAPIDConfig)
	}
	key, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), raw)
	if err != nil {
		return nil, fmt.Errorf("%w: the private key is not a valid P-256 scalar", ErrVAPIDConfig)
	}
	return &vapidSigner{key: key, keyPart: ", k=" + public, subject: subject, now: now,
		tokens: make(map[string]vapidToken)}, nil
}

// header returns the Authorization header for a push service origin
// (scheme://host[:port], the JWT's aud), signing a new token only when
// the cached one has less than tokenRenewBefore left.
func (v *vapidSigner) header(origin string) (string, error) {
	now := v.now()
	v.mu.Lock()
	t, ok := v.tokens[origin]
	v.mu.Unlock()
	if ok && t.exp.Sub(now) >= tokenRenewBefore && t.exp.Sub(now) <= maxTokenLifetime {
		return t.header, nil
	}
	// Two sends may sign at once for one origin; both tokens are valid and
	// the later one stays.
	t, err := v.sign(origin, now)
	if err != nil {
		return "", err
	}
	v.mu.Lock()
	if len(v.tokens) >= maxCachedOrigins {
		clear(v.tokens)
	}
	v.tokens[origin] = t
	v.mu.Unlock()
	return t.header, nil
}

func (v *vapidSigner) sign(origin string, now time.Time) (vapidToken, error) {
	exp := now.Add(tokenLifetime).Truncate(time.Second)
	claims, err := json.Marshal(struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}{origin, exp.Unix(), v.subject})
	if err != nil {
		return vapidToken{}, err
	}
	unsigned := jwtHeader + "." + base64.RawURLEncoding.EncodeToString(claims)
	digest := sha256.Sum256([]byte(unsigned))
	r, s, err := ecdsa.Sign(rand.Reader, v.key, digest[:])
	if err != nil {
		return vapidToken{}, fmt.Errorf("sign the VAPID token: %w", err)
	}
	var sig [64]byte // JWS ES256 is r || s, 32 bytes each (RFC 7518 §3.4)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return vapidToken{
		header: "vapid t=" + unsigned + "." + base64.RawURLEncoding.EncodeToString(sig[:]) + v.keyPart,
		exp:    exp,
	}, nil
}
