package webpush

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter caps what a push service can ask for, so an absurd header
// cannot overflow a Duration; the sender's retry budget is far smaller.
const maxRetryAfter = 24 * time.Hour

// parseRetryAfter reads a Retry-After value (RFC 9110 §10.2.3): a number of
// seconds or an HTTP-date, relative to now. A date in the past means no
// wait. ok is false when the value is absent or malformed.
func parseRetryAfter(v string, now time.Time) (wait time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if strings.Trim(v, "0123456789") == "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true // only overflow fails on digits
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), maxRetryAfter), true
}

// backoff is the wait before retry number try (1-based) when the push service
// named none: exponential from base, capped, with equal jitter so a burst of
// failures does not retry in lockstep.
func backoff(try int, base, limit time.Duration, jitter func(time.Duration) time.Duration) time.Duration {
	d := base
	for i := 1; i < try && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	half := d / 2
	return half + jitter(d-half)
}
