package api

import (
	"net"
	"net/netip"
	"sync"
)

// ConnLimits bound the open connections of a listener: per client address
// (the peer; a trusted proxy's connections count only towards Total), and
// in all. Total stays below the process's descriptor limit, so the server
// never meets EMFILE when it accepts and keeps descriptors for its database,
// its pushes and its health checks (issue 22: 1 100 connections that never
// sent their body made /healthz fail on a server with 1 024 descriptors).
type ConnLimits struct {
	PerAddress     int
	Total          int
	TrustedProxies []netip.Prefix
}

// Defaults of ConnLimits.
const (
	DefaultMaxConnsPerAddress = 64
	// minReservedDescriptors is the fewest descriptors DefaultMaxConns
	// keeps from incoming connections.
	minReservedDescriptors = 64
)

// DefaultMaxConns is the default cap on open connections for a process
// whose descriptor limit is nofile: three quarters of it, keeping at least
// 64 descriptors for everything else.
func DefaultMaxConns(nofile uint64) int {
	reserve := max(nofile/4, minReservedDescriptors)
	if nofile <= reserve+minReservedDescriptors {
		return minReservedDescriptors
	}
	return int(nofile - reserve)
}

// LimitListener accepts from l within c: a connection over a cap is closed
// at once, before anything is read from it, and the listener goes on.
func LimitListener(l net.Listener, c ConnLimits) net.Listener {
	return &connLimiter{Listener: l, limits: c, perAddress: map[netip.Addr]int{}}
}

type connLimiter struct {
	net.Listener
	limits ConnLimits

	mu         sync.Mutex
	open       int
	perAddress map[netip.Addr]int // only addresses with connections open
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, limited := l.key(conn)
		if l.admit(key, limited) {
			return &limitedConn{Conn: conn, release: func() { l.release(key, limited) }}, nil
		}
		_ = conn.Close()
	}
}

// key is the address a connection counts against (a /64 for IPv6), and
// whether a per-address cap applies to it.
func (l *connLimiter) key(conn net.Conn) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(conn.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}, false
	}
	addr := ap.Addr().Unmap()
	if trusted(addr, l.limits.TrustedProxies) {
		return addr, false
	}
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		addr = p.Addr()
	}
	return addr, true
}

func (l *connLimiter) admit(key netip.Addr, limited bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.limits.Total || limited && l.perAddress[key] >= l.limits.PerAddress {
		return false
	}
	l.open++
	if limited {
		l.perAddress[key]++
	}
	return true
}

func (l *connLimiter) release(key netip.Addr, limited bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if limited {
		if l.perAddress[key]--; l.perAddress[key] <= 0 {
			delete(l.perAddress, key)
		}
	}
}

// limitedConn gives its place back when it is closed, once.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
