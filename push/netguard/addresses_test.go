package netguard

import (
	"net/netip"
	"testing"
)

func TestRefusedAddressPublic(t *testing.T) {
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"} {
		if why := RefusedAddress(netip.MustParseAddr(a)); why != "" {
			t.Errorf("%s refused as %s", a, why)
		}
	}
}

// TestRefusedAddressSpecialPurpose takes an address from every block of the
// IANA IPv4 and IPv6 Special-Purpose Address Registries (and the deprecated
// and multicast ranges amsg adds), written here independently of the list
// in code: each must be refused, its first and last address alike.
func TestRefusedAddressSpecialPurpose(t *testing.T) {
	for _, block := range []string{
		"0.0.0.0/8", "0.0.0.0/32", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.0.0.0/29", "192.0.0.8/32", "192.0.0.9/32", "192.0.0.10/32",
		"192.0.0.170/32", "192.0.0.171/32", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24",
		"192.88.99.0/24", "192.88.99.2/32", "192.168.0.0/16", "192.175.48.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "255.255.255.255/32",
		"::1/128", "::/128", "64:ff9b:1::/48", "100::/64", "100:0:0:1::/64", "2001::/23", "2001::/32",
		"2001:1::1/128", "2001:1::2/128", "2001:1::3/128", "2001:2::/48", "2001:3::/32", "2001:4:112::/48",
		"2001:10::/28", "2001:20::/28", "2001:30::/28", "2001:db8::/32", "2620:4f:8000::/48", "3fff::/20",
		"5f00::/16", "fc00::/7", "fe80::/10",
		"::/96", "::ffff:0:0:0/96", "fec0::/10", "224.0.0.0/4", "ff00::/8",
	} {
		t.Run(block, func(t *testing.T) {
			p := netip.MustParsePrefix(block)
			for _, a := range []netip.Addr{p.Addr(), lastAddr(p)} {
				if RefusedAddress(a) == "" {
					t.Errorf("%s (in %s) is not refused", a, block)
				}
			}
		})
	}
	// The blocks that carry an IPv4 address are judged by it.
	for a, refused := range map[string]bool{
		"::ffff:127.0.0.1": true, "::ffff:8.8.8.8": false,
		"64:ff9b::a00:1": true, "64:ff9b::808:808": false,
		"2002:c0a8:101::1": true, "2002:808:808::1": false,
		"::ffff:0:127.0.0.1": true, "::ffff:0:8.8.8.8": true,
	} {
		if got := RefusedAddress(netip.MustParseAddr(a)) != ""; got != refused {
			t.Errorf("%s refused = %v, want %v", a, got, refused)
		}
	}
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
