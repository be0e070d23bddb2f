package webpush

import (
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"syscall"

	"amsg/push"
	"amsg/push/netguard"
)

// ErrInvalidSubscription is what every *InvalidSubscriptionError matches with
// errors.Is; the API answers it with 400 INVALID_PUSH_SUBSCRIPTION.
var ErrInvalidSubscription = errors.New("invalid push subscription")

// InvalidSubscriptionError says which part of a subscription is unusable and
// why, in words fit for the API's error message.
type InvalidSubscriptionError struct {
	Field  string // "endpoint", "keys.p256dh" or "keys.auth"
	Reason string
}

func (e *InvalidSubscriptionError) Error() string { return e.Field + " " + e.Reason }

// Unwrap makes errors.Is(err, ErrInvalidSubscription) hold.
func (e *InvalidSubscriptionError) Unwrap() error { return ErrInvalidSubscription }

func invalid(field, format string, a ...any) error {
	return &InvalidSubscriptionError{Field: field, Reason: fmt.Sprintf(format, a...)}
}

// Bounds on outside input: browser endpoints are a few hundred characters,
// keys under a hundred.
const (
	maxEndpointChars = 2048
	maxKeyChars      = 256
)

// decodeKey decodes a key written in base64url or standard base64, padded or
// not, the forms browsers and libraries emit.
func decodeKey(s string) ([]byte, error) {
	if len(s) > maxKeyChars {
		return nil, fmt.Errorf("longer than %d characters", maxKeyChars)
	}
	s = strings.TrimRight(s, "=")
	enc := base64.RawURLEncoding
	if strings.ContainsAny(s, "+/") {
		enc = base64.RawStdEncoding
	}
	return enc.Strict().DecodeString(s)
}

// CheckKeys checks a subscription's keys: p256dh must be a 65-byte
// uncompressed point on P-256 and auth 16 bytes, or encryption would fail at
// every send.
func CheckKeys(keys push.SubscriptionKeys) error {
	_, err := parseKeys(keys)
	return err
}

// parseKeys is CheckKeys that returns the decoded keys, as a send needs
// them.
func parseKeys(keys push.SubscriptionKeys) (uaKeys, error) {
	if keys.P256dh == "" {
		return uaKeys{}, invalid("keys.p256dh", "is missing")
	}
	p, err := decodeKey(keys.P256dh)
	if err != nil {
		return uaKeys{}, invalid("keys.p256dh", "is not base64url")
	}
	if len(p) != 65 || p[0] != 4 {
		return uaKeys{}, invalid("keys.p256dh", "is not a 65-byte uncompressed P-256 point (got %d bytes)", len(p))
	}
	public, err := ecdh.P256().NewPublicKey(p)
	if err != nil {
		return uaKeys{}, invalid("keys.p256dh", "is not a point on the P-256 curve")
	}
	if keys.Auth == "" {
		return uaKeys{}, invalid("keys.auth", "is missing")
	}
	a, err := decodeKey(keys.Auth)
	if err != nil {
		return uaKeys{}, invalid("keys.auth", "is not base64url")
	}
	if len(a) != 16 {
		return uaKeys{}, invalid("keys.auth", "must be 16 bytes (got %d)", len(a))
	}
	return uaKeys{public: public, publicBytes: p, auth: a}, nil
}

// EndpointPolicy decides which push endpoints amsg sends to. By default only
// https endpoints on the default port whose host resolves to public
// addresses only; AllowPrivate (development and tests) also admits http,
// loopback and private networks. Hosts under .invalid are refused always:
// they can never be reached.
type EndpointPolicy struct {
	AllowPrivate bool
	Resolver     netguard.Resolver // nil means net.DefaultResolver
}

// CheckSubscription checks the endpoint and the keys, as PUT
// /push-subscription does before storing.
func (p EndpointPolicy) CheckSubscription(ctx context.Context, sub push.Subscription) error {
	if err := p.CheckEndpoint(ctx, sub.Endpoint); err != nil {
		return err
	}
	return CheckKeys(sub.Keys)
}

// CheckEndpoint checks an endpoint's form and, unless private endpoints are
// allowed, resolves its host and refuses it if any address is not public.
// The sender enforces the same address rule when it dials, so a host that
// re-resolves to a private address later is refused then too.
func (p EndpointPolicy) CheckEndpoint(ctx context.Context, endpoint string) error {
	u, err := p.parseEndpoint(endpoint)
	if err != nil || p.AllowPrivate {
		return err
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	refusal, err := netguard.CheckHost(ctx, p.Resolver, host)
	switch {
	case errors.Is(err, netguard.ErrUnresolved):
		return invalid("endpoint", "host %s does not resolve", host)
	case err != nil:
		return err
	case refusal != nil:
		return invalid("endpoint", "%s", refusal.Reason(host))
	}
	return nil
}

// parseEndpoint applies the checks that need no network: a bounded absolute
// URL with the allowed scheme, a host, no credentials, and no reserved or
// (unless allowed) local host name or non-default port.
func (p EndpointPolicy) parseEndpoint(endpoint string) (*url.URL, error) {
	if strings.TrimSpace(endpoint) == "" {
		return nil, invalid("endpoint", "is missing")
	}
	if len(endpoint) > maxEndpointChars {
		return nil, invalid("endpoint", "is longer than %d characters", maxEndpointChars)
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Opaque != "" {
		return nil, invalid("endpoint", "is not a URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && p.AllowPrivate:
	default:
		return nil, invalid("endpoint", "must be an https URL")
	}
	if u.User != nil {
		return nil, invalid("endpoint", "must not carry credentials")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return nil, invalid("endpoint", "has no host")
	}
	if host == "invalid" || strings.HasSuffix(host, ".invalid") {
		return nil, invalid("endpoint", "host %s is under .invalid, which never resolves", host)
	}
	if p.AllowPrivate {
		return u, nil
	}
	if netguard.IsLocalName(host) {
		return nil, invalid("endpoint", "host %s is local", host)
	}
	if port := u.Port(); port != "" && port != "443" {
		return nil, invalid("endpoint", "must use the default https port, not %s", port)
	}
	return u, nil
}

// ErrRefusedAddress is the dial error for an address the policy refuses.
var ErrRefusedAddress = errors.New("push endpoint address refused")

// dialControl runs for every address the sender's dialer tries, after DNS
// resolution, so DNS rebinding cannot reach a private network.
func (p EndpointPolicy) dialControl(network, address string, c syscall.RawConn) error {
	if p.AllowPrivate {
		return nil
	}
	return netguard.RefusePrivate(ErrRefusedAddress)(network, address, c)
}
