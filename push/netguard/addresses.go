package netguard

import "net/netip"

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
// Push endpoints, LLM endpoints and webhook URLs share it.
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
