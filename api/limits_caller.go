package api

import (
	"net/http"
	"sync"
	"time"
)

// callerLimits are the request limits of one server: per client address, a
// request rate, a budget of body bytes and of distinct user ids per hour;
// per user, a request rate charged only to requests that proved they are
// that user. An X-User-Id is a claim: charging it would let anyone who
// knows a user's id spend the user's budget and lock the user out (issue
// 22), and let one address rotate ids to multiply its own.
type callerLimits struct {
	byAddress  *rateLimiter // requests
	writeBytes *rateLimiter // request body bytes
	newUsers   *userIDLimiter
	byUser     *rateLimiter // requests that proved their user
}

// newCallerLimits builds the limits l names; nil when they are off.
func newCallerLimits(l Limits, now func() time.Time) *callerLimits {
	if l.RateLimitOff {
		return nil
	}
	perHour := float64(l.WriteBytesPerAddressPerHour) / time.Hour.Seconds()
	return &callerLimits{
		byAddress:  newRateLimiter(l.RequestsPerSecond, l.Burst, now),
		writeBytes: newRateLimiter(perHour, int(l.WriteBytesPerAddressPerHour), now),
		newUsers:   newUserIDLimiter(l.NewUsersPerAddressPerHour, time.Hour, now),
		byUser:     newRateLimiter(l.UserRequestsPerSecond, l.UserBurst, now),
	}
}

// rateLimit applies the per-address limits to every request but health
// checks, before the handler reads anything.
func (s *Server) rateLimit(next http.Handler) http.Handler {
	if s.limits == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		if err := s.limits.admit(w, r, s.callerAddress(r)); err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// admit charges a request to its address: one request, and for a request
// that may write, its body bytes (the route's whole allowance when the
// length is not declared) and the user id it writes as.
func (l *callerLimits) admit(w http.ResponseWriter, r *http.Request, address string) error {
	if ok, wait := l.byAddress.allow(address); !ok {
		return rateLimited(w, wait, "requestsPerAddress")
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
		return nil
	}
	if user := proofUser(r); user != "" {
		if ok, wait := l.newUsers.allow(address, user); !ok {
			return rateLimited(w, wait, "newUsersPerAddress")
		}
	}
	n := r.ContentLength
	if n < 0 {
		n = maxRequestBody
	}
	if n > 0 {
		if ok, wait := l.writeBytes.allowN(address, int(n)); !ok {
			return rateLimited(w, wait, "writeBytesPerAddress")
		}
	}
	return nil
}

// maxRequestBody is what a request of undeclared length is charged: the
// largest body any route takes (PUT /client-state's default).
const maxRequestBody = 16 << 20

// chargeUser charges a request to userID once it proved it is that user (a
// Bearer token minted for the user, or its encrypted envelope opened under
// the user key), once a request whichever proofs it carries.
func (s *Server) chargeUser(w http.ResponseWriter, r *http.Request, userID string) error {
	if s.limits == nil || chargedUser(r) == userID {
		return nil
	}
	if ok, wait := s.limits.byUser.allow(userID); !ok {
		return rateLimited(w, wait, "requestsPerUser")
	}
	return nil
}

// chargedUserKey marks in a request's context the user it was charged to.
type chargedUserKey struct{}

// chargedUser is the user r proved it is and was charged to, if any.
func chargedUser(r *http.Request) string {
	user, _ := r.Context().Value(chargedUserKey{}).(string)
	return user
}

// callerAddress is the rate-limit key of the request's client address.
func (s *Server) callerAddress(r *http.Request) string {
	return addressKey(clientAddress(r, s.cfg.Limits.TrustedProxies))
}

// userIDLimiter caps the distinct user ids each address names within a
// window. Its map is bounded like rateLimiter's: expired windows are
// dropped when it is full, and if none has expired, all of them.
type userIDLimiter struct {
	max    int
	window time.Duration
	now    func() time.Time

	mu     sync.Mutex
	byAddr map[string]*userIDWindow
}

type userIDWindow struct {
	start time.Time
	ids   map[string]struct{}
}

// maxUserIDAddresses bounds userIDLimiter's map: each entry holds up to
// max ids, so it is kept smaller than the rate limiters'.
const maxUserIDAddresses = 10_000

func newUserIDLimiter(max int, window time.Duration, now func() time.Time) *userIDLimiter {
	return &userIDLimiter{max: max, window: window, now: now, byAddr: map[string]*userIDWindow{}}
}

// allow records that address named user; it refuses a user new to the
// address's window once the window holds max, with the time until it ends.
func (l *userIDLimiter) allow(address, user string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	win := l.byAddr[address]
	if win == nil || now.Sub(win.start) >= l.window {
		if win == nil && len(l.byAddr) >= maxUserIDAddresses {
			l.sweep(now)
		}
		win = &userIDWindow{start: now, ids: map[string]struct{}{}}
		l.byAddr[address] = win
	}
	if _, ok := win.ids[user]; ok {
		return true, 0
	}
	if len(win.ids) >= l.max {
		return false, win.start.Add(l.window).Sub(now)
	}
	win.ids[user] = struct{}{}
	return true, 0
}

func (l *userIDLimiter) sweep(now time.Time) {
	for k, win := range l.byAddr {
		if now.Sub(win.start) >= l.window {
			delete(l.byAddr, k)
		}
	}
	if len(l.byAddr) >= maxUserIDAddresses {
		clear(l.byAddr)
	}
}
