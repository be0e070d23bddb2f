package webpush

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"strings"
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
// returns them re-encoded as unpadded base64url, the only form webpush-go
// decodes (operators paste standard base64 too).
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

// webpushSubscriber is the Options.Subscriber that makes webpush-go v1.4.0
// sign sub: it prefixes "mailto:" to anything not starting with "https:", so
// it must get the bare address (else the token says mailto:mailto:).
func webpushSubscriber(sub string) string { return strings.TrimPrefix(sub, "mailto:") }

// placeholderSubject reports a subject whose domain cannot receive mail;
// Apple's push service rejects those tokens.
func placeholderSubject(sub string) bool {
	at := strings.LastIndexByte(sub, '@')
	if !strings.HasPrefix(sub, "mailto:") || at < 0 {
		return false
	}
	domain := strings.ToLower(sub[at+1:])
	for _, suffix := range []string{"localhost", ".local", ".invalid", ".test", ".example"} {
		if domain == strings.TrimPrefix(suffix, ".") || strings.HasSuffix(domain, suffix) {
			return true
		}
	}
	return !strings.Contains(domain, ".")
}
