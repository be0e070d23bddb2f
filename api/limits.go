package api

import (
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"amsg/loop"

	"golang.org/x/time/rate"

	"amsg/push/errcode"
)

// Limits bound what one caller can make the server do. The zero value of a
// field means its default (see withDefaults); docs/security.md lists each
// with the threat it answers.
type Limits struct {
	// BodyReadTimeout bounds the arrival of a request body;
	// BodyStartTimeout the arrival of its first bytes for a request that
	// carried no credential.
	BodyReadTimeout  time.Duration
	BodyStartTimeout time.Duration
	// WriteTimeout bounds a response from its first byte; an event stream
	// renews it with every frame.
	WriteTimeout time.Duration

	// MaxRounds, MaxRoundsPerUser and MaxRoundsPerAddress cap the LLM
	// rounds (/instant, /continue) running at once: over all callers, per
	// user that proved its id (else per client address), and per client
	// address whatever ids it names.
	MaxRounds           int
	MaxRoundsPerUser    int
	MaxRoundsPerAddress int
	// OrphanRoundTimeout bounds how long a round runs on after its client
	// left; MaxOrphanRounds caps how many do at once, rounds beyond it are
	// stopped when their client leaves.
	OrphanRoundTimeout time.Duration
	MaxOrphanRounds    int

	// RateLimitOff turns the request rate limits off (load tests, a proxy
	// that limits).
	RateLimitOff bool
	// RequestsPerSecond and Burst are each client address's request rate;
	// UserRequestsPerSecond and UserBurst each user's, counted only for
	// requests that proved they are that user (limits_caller.go).
	RequestsPerSecond     float64
	Burst                 int
	UserRequestsPerSecond float64
	UserBurst             int
	// WriteBytesPerAddressPerHour bounds the request body bytes one client
	// address may send in an hour, and NewUsersPerAddressPerHour the
	// distinct user ids it may write as in an hour: storage quotas are per
	// user id, and ids are free.
	WriteBytesPerAddressPerHour int64
	NewUsersPerAddressPerHour   int
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// address; any other peer is the client itself.
	TrustedProxies []netip.Prefix

	// MaxTasksPerUser caps a user's pending tasks.
	MaxTasksPerUser int
	// MaxStateBytesPerUser and MaxStateBytesPerNamespace cap what a user's
	// client state takes in the database (sealed values, chunks included).
	MaxStateBytesPerUser      int64
	MaxStateBytesPerNamespace int64
	// ClientStateReadBudget bounds the memory the GET /client-state
	// answers in flight take together (limits_memory.go,
	// clientstate_stream.go).
	ClientStateReadBudget int64
	// MaxPushesPerRound caps the pushes one LLM round may send (each goes
	// to every device of the user): a round that would send more fails.
	MaxPushesPerRound int

	// TokenProofMaxAge is how long a user's proof of the client token lets
	// an encrypted /instant or /continue in without it (tokenproof.go).
	TokenProofMaxAge time.Duration
}

// Defaults of Limits, generous enough for a real app on several devices.
const (
	DefaultMaxRounds             = 64
	DefaultMaxRoundsPerUser      = 4
	DefaultMaxRoundsPerAddress   = 8
	DefaultOrphanRoundTimeout    = 2 * time.Minute
	DefaultMaxOrphanRounds       = 32
	DefaultRequestsPerSecond     = 20
	DefaultBurst                 = 200
	DefaultUserRequestsPerSecond = 10
	DefaultUserBurst             = 100

	DefaultWriteBytesPerAddressPerHour = 128 << 20
	DefaultNewUsersPerAddressPerHour   = 32

	DefaultMaxTasksPerUser           = 1000
	DefaultMaxStateBytesPerUser      = 256 << 20
	DefaultMaxStateBytesPerNamespace = 64 << 20
	DefaultMaxPushesPerRound         = loop.DefaultMaxPushesPerRound
)

func (l Limits) withDefaults() Limits {
	setDefault(&l.BodyReadTimeout, DefaultBodyReadTimeout)
	setDefault(&l.BodyStartTimeout, DefaultBodyStartTimeout)
	setDefault(&l.WriteTimeout, DefaultWriteTimeout)
	setDefault(&l.MaxRounds, DefaultMaxRounds)
	setDefault(&l.MaxRoundsPerUser, DefaultMaxRoundsPerUser)
	setDefault(&l.MaxRoundsPerAddress, DefaultMaxRoundsPerAddress)
	setDefault(&l.OrphanRoundTimeout, DefaultOrphanRoundTimeout)
	setDefault(&l.MaxOrphanRounds, DefaultMaxOrphanRounds)
	setDefault(&l.RequestsPerSecond, DefaultRequestsPerSecond)
	setDefault(&l.Burst, DefaultBurst)
	setDefault(&l.UserRequestsPerSecond, DefaultUserRequestsPerSecond)
	setDefault(&l.UserBurst, DefaultUserBurst)
	setDefault(&l.WriteBytesPerAddressPerHour, DefaultWriteBytesPerAddressPerHour)
	setDefault(&l.NewUsersPerAddressPerHour, DefaultNewUsersPerAddressPerHour)
	setDefault(&l.MaxTasksPerUser, DefaultMaxTasksPerUser)
	setDefault(&l.MaxStateBytesPerUser, DefaultMaxStateBytesPerUser)
	setDefault(&l.MaxStateBytesPerNamespace, DefaultMaxStateBytesPerNamespace)
	setDefault(&l.MaxPushesPerRound, DefaultMaxPushesPerRound)
	setDefault(&l.ClientStateReadBudget, DefaultClientStateReadBudget)
	setDefault(&l.TokenProofMaxAge, DefaultTokenProofMaxAge)
	return l
}

func setDefault[T int | int64 | float64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// rateLimited is the answer to a caller over a rate or concurrency limit.
func rateLimited(w http.ResponseWriter, retryAfter time.Duration, limit string) *Error {
	seconds := max(1, int(math.Ceil(min(retryAfter, time.Hour).Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(seconds))
	return fail(errcode.RateLimited).
		withDetails(map[string]any{"limit": limit, "retryAfterSeconds": seconds})
}

// quotaExceeded is the answer to a write that would take a caller over a
// quota; details name the quota and its limit.
func quotaExceeded(quota string, limit int64) *Error {
	return fail(errcode.QuotaOf.With(quota, limit)).
		withDetails(map[string]any{"quota": quota, "limit": limit})
}

// rateLimiter holds a token bucket per key (a client address or a user).
// Buckets that are full again carry no state and are dropped when the map
// grows past maxRateKeys, so a caller cycling through addresses cannot grow
// it without bound.
type rateLimiter struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

const maxRateKeys = 100_000

func newRateLimiter(perSecond float64, burst int, now func() time.Time) *rateLimiter {
	return &rateLimiter{limit: rate.Limit(perSecond), burst: burst, now: now, buckets: map[string]*rate.Limiter{}}
}

// allow takes a token from key's bucket; when there is none it returns how
// long until there is.
func (l *rateLimiter) allow(key string) (bool, time.Duration) {
	return l.allowN(key, 1)
}

// allowN takes n tokens from key's bucket, or none and how long until there
// are n (forever when n is over the burst).
func (l *rateLimiter) allowN(key string, n int) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxRateKeys {
			l.sweep(now)
		}
		b = rate.NewLimiter(l.limit, l.burst)
		l.buckets[key] = b
	}
	r := b.ReserveN(now, n)
	if !r.OK() {
		return false, rate.InfDuration
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// sweep drops the buckets that are full; if none is, it drops them all
// (every key is then new, a burst each: the price of a bounded map).
func (l *rateLimiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.burst) {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= maxRateKeys {
		clear(l.buckets)
	}
}

// clientAddress is the address of the client: the peer, or, when the peer
// is a trusted proxy, the last X-Forwarded-For entry that is not one (the
// entries before it are the client's own word).
func clientAddress(r *http.Request, proxies []netip.Prefix) netip.Addr {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	addr := peer.Addr().Unmap()
	if !trusted(addr, proxies) {
		return addr
	}
	hops := splitHops(strings.Join(r.Header.Values("X-Forwarded-For"), ","))
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(hops[i])
		if err != nil {
			return addr // a malformed hop: stop at the last address known good
		}
		addr = hop.Unmap()
		if !trusted(addr, proxies) {
			return addr
		}
	}
	return addr
}

// splitHops splits an X-Forwarded-For value into its entries.
func splitHops(xff string) []string {
	hops := strings.Split(xff, ",")
	for i := range hops {
		hops[i] = strings.TrimSpace(hops[i])
	}
	return hops
}

func trusted(addr netip.Addr, proxies []netip.Prefix) bool {
	for _, p := range proxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// addressKey is the rate-limit key of an address: IPv6 clients get a /64
// each, the block one subscriber usually holds.
func addressKey(addr netip.Addr) string {
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

// ParseTrustedProxies reads AMSG_TRUSTED_PROXIES: comma-separated addresses
// or CIDR prefixes.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !strings.Contains(part, "/") {
			a, err := netip.ParseAddr(part)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: %w", part, err)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: %w", part, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
