package webpush

import (
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	"amsg/push"
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
	return uaKeys{public: public, auth: a}, nil
}

// Resolver looks up a host's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// EndpointPolicy decides which push endpoints amsg sends to. By default only
// https endpoints on the default port whose host resolves to public
// addresses only; AllowPrivate (development and tests) also admits http,
// loopback and private networks. Hosts under .invalid are refused always:
// they can never be reached.
type EndpointPolicy struct {
	AllowPrivate bool
	Resolver     Resolver // nil means net.DefaultResolver
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
	if ip, err := netip.ParseAddr(host); err == nil {
		if why := RefusedAddress(ip); why != "" {
			return invalid("endpoint", "host %s is %s", host, why)
		}
		return nil
	}
	resolver := p.Resolver
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return invalid("endpoint", "host %s does not resolve", host)
	}
	for _, ip := range addrs {
		if why := RefusedAddress(ip); why != "" {
			return invalid("endpoint", "host %s resolves to %s, %s", host, ip.Unmap(), why)
		}
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
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
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
	return RefusePrivate(ErrRefusedAddress)(network, address, c)
}

// RefusePrivate is a net.Dialer Control that refuses every address
// RefusedAddress refuses, with an error wrapping refused. The push sender
// and the LLM client dial through it.
func RefusePrivate(refused error) func(network, address string, c syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %s is not an IP address", refused, address)
		}
		if why := RefusedAddress(ap.Addr()); why != "" {
			return fmt.Errorf("%w: %s is %s", refused, ap.Addr().Unmap(), why)
		}
		return nil
	}
}

// specialPurpose is every block of the IANA IPv4 Special-Purpose Address
// Registry (iana-ipv4-special-registry) and the IANA IPv6 Special-Purpose
// Address Registry (iana-ipv6-special-registry) as published in 2025,
// nested entries included, plus the ranges outside them no public service
// lives in. All are refused, the anycast services the registries mark
// globally reachable too: no push service or LLM sits at a PCP, TURN, AMT or
// AS112 address. The three IPv6 blocks that carry an IPv4 address
// (IPv4-mapped, NAT64 64:ff9b::/96 and 6to4 2002::/16) are not here:
// RefusedAddress judges them by the address they carry.
var specialPurpose = []struct {
	prefix netip.Prefix
	name   string // with its article: "a loopback" address
}{
	// IPv4 Special-Purpose Address Registry.
	{netip.MustParsePrefix("0.0.0.0/8"), "a this-network"},
	{netip.MustParsePrefix("0.0.0.0/32"), "an unspecified (this-host)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private-use"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT (shared)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private-use"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol"},
	{netip.MustParsePrefix("192.0.0.0/29"), "an IPv4 service continuity"},
	{netip.MustParsePrefix("192.0.0.8/32"), "a dummy IPv4"},
	{netip.MustParsePrefix("192.0.0.9/32"), "a PCP anycast"},
	{netip.MustParsePrefix("192.0.0.10/32"), "a TURN anycast"},
	{netip.MustParsePrefix("192.0.0.170/32"), "a NAT64 discovery"},
	{netip.MustParsePrefix("192.0.0.171/32"), "a NAT64 discovery"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation (TEST-NET-1)"},
	{netip.MustParsePrefix("192.31.196.0/24"), "an AS112"},
	{netip.MustParsePrefix("192.52.193.0/24"), "an AMT"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a deprecated 6to4 relay anycast"},
	{netip.MustParsePrefix("192.88.99.2/32"), "a 6a44 relay anycast"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private-use"},
	{netip.MustParsePrefix("192.175.48.0/24"), "a direct-delegation AS112"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation (TEST-NET-2)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation (TEST-NET-3)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved"},
	{netip.MustParsePrefix("255.255.255.255/32"), "a limited-broadcast"},
	// IPv6 Special-Purpose Address Registry.
	{netip.MustParsePrefix("::1/128"), "a loopback"},
	{netip.MustParsePrefix("::/128"), "an unspecified"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64"},
	{netip.MustParsePrefix("100::/64"), "a discard-only"},
	{netip.MustParsePrefix("100:0:0:1::/64"), "a dummy IPv6"},
	{netip.MustParsePrefix("2001::/23"), "an IETF protocol"},
	{netip.MustParsePrefix("2001::/32"), "a Teredo"},
	{netip.MustParsePrefix("2001:1::1/128"), "a PCP anycast"},
	{netip.MustParsePrefix("2001:1::2/128"), "a TURN anycast"},
	{netip.MustParsePrefix("2001:1::3/128"), "a DNS-SD SRP anycast"},
	{netip.MustParsePrefix("2001:2::/48"), "a benchmarking"},
	{netip.MustParsePrefix("2001:3::/32"), "an AMT"},
	{netip.MustParsePrefix("2001:4:112::/48"), "an AS112"},
	{netip.MustParsePrefix("2001:10::/28"), "a deprecated ORCHID"},
	{netip.MustParsePrefix("2001:20::/28"), "an ORCHIDv2"},
	{netip.MustParsePrefix("2001:30::/28"), "a drone remote ID"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation"},
	{netip.MustParsePrefix("2620:4f:8000::/48"), "a direct-delegation AS112"},
	{netip.MustParsePrefix("3fff::/20"), "a documentation"},
	{netip.MustParsePrefix("5f00::/16"), "an SRv6 SID"},
	{netip.MustParsePrefix("fc00::/7"), "a unique-local (private)"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local"},
	// Outside the registries: deprecated forms that still reach IPv4 or a
	// site through some stacks, and multicast (its own registries).
	{netip.MustParsePrefix("::/96"), "a deprecated IPv4-compatible"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "an IPv4-translated"},
	{netip.MustParsePrefix("fec0::/10"), "a deprecated site-local"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast"},
}

// IPv6 ranges that carry an IPv4 address a gateway would forward to.
var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// RefusedAddress says why ip is not a public unicast address, or "" if it is.
// The LLM client's endpoint policy (llm.URLPolicy) shares it.
func RefusedAddress(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() {
		return "not an IP address"
	}
	// The longest matching block names the address best.
	why, bits := "", -1
	for _, b := range specialPurpose {
		if b.prefix.Bits() > bits && b.prefix.Contains(ip) {
			why, bits = b.name+" address ("+b.prefix.String()+")", b.prefix.Bits()
		}
	}
	if why != "" {
		return why
	}
	b := ip.As16()
	switch {
	case nat64Prefix.Contains(ip):
		if why := RefusedAddress(netip.AddrFrom4([4]byte(b[12:16]))); why != "" {
			return "a NAT64 address of " + why
		}
	case sixToFour.Contains(ip):
		if why := RefusedAddress(netip.AddrFrom4([4]byte(b[2:6]))); why != "" {
			return "a 6to4 address of " + why
		}
	}
	return ""
}
