// Package netguard is amsg's outbound address policy: the one rule for which
// hosts amsg may call on someone else's say-so. Push endpoints (a browser's
// choice), LLM endpoints (a caller's apiUrl) and webhook URLs (an operator's)
// all reach the network through it, so a request cannot make the server call
// into its own private network (SSRF).
//
// A host is judged twice: when its URL is accepted (CheckHost, on the
// addresses its name resolves to then) and when a connection is dialled
// (RefusePrivate as the dialer's Control, on the address actually dialled),
// so a name that re-resolves to a private address later (DNS rebinding) is
// refused then too. Only public unicast addresses pass; an operator who runs
// the receivers on a private network turns the policy off per client.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// Resolver looks up a host's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ErrUnresolved is CheckHost's error for a name that resolves to nothing.
var ErrUnresolved = errors.New("host does not resolve")

// Refusal says why CheckHost refuses a host: the address judged and why.
type Refusal struct {
	Addr    netip.Addr
	Literal bool   // the host is the address itself, not a name for it
	Why     string // RefusedAddress's reason, with its article
}

// Reason words the refusal of host as the URL checks give it: "host h is
// a loopback address (…)", or "host h resolves to a, a private-use address
// (…)".
func (r *Refusal) Reason(host string) string {
	if r.Literal {
		return fmt.Sprintf("host %s is %s", host, r.Why)
	}
	return fmt.Sprintf("host %s resolves to %s, %s", host, r.Addr, r.Why)
}

// IsLocalName reports whether host is localhost or a name under it, which
// always means this machine whatever a resolver says.
func IsLocalName(host string) bool {
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// MapResolver answers from a map of host names to addresses, for tests and
// fixed setups; a name not in it does not resolve.
type MapResolver map[string][]string

func (m MapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := m[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return nil, err
		}
		out = append(out, ip)
	}
	return out, nil
}

// CheckHost judges host: an IP literal by itself, a name by every address r
// (net.DefaultResolver when nil) resolves it to. It returns nil, nil when
// every address is public; a failed lookup is an error wrapping
// ErrUnresolved, or the context's error when that is why.
func CheckHost(ctx context.Context, r Resolver, host string) (*Refusal, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		if why := RefusedAddress(ip); why != "" {
			return &Refusal{Addr: ip.Unmap(), Literal: true, Why: why}, nil
		}
		return nil, nil
	}
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil || len(addrs) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrUnresolved, host)
	}
	for _, ip := range addrs {
		if why := RefusedAddress(ip); why != "" {
			return &Refusal{Addr: ip.Unmap(), Why: why}, nil
		}
	}
	return nil, nil
}

// RefusePrivate is a net.Dialer Control that refuses every address
// RefusedAddress refuses, with an error wrapping refused. It runs after DNS
// resolution, on the address about to be dialled.
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

// Dial is d's DialContext, or, when r is set (a test's names), one that
// resolves the host with r and dials its addresses in turn; the dialer's
// Control still checks each address.
func Dial(d *net.Dialer, r Resolver) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if r == nil {
		return d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if _, err := netip.ParseAddr(host); err == nil {
			return d.DialContext(ctx, network, addr)
		}
		ips, err := r.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		err = fmt.Errorf("%s resolves to no address", host)
		for _, ip := range ips {
			var c net.Conn
			if c, err = d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port)); err == nil {
				return c, nil
			}
		}
		return nil, err
	}
}
