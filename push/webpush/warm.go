package webpush

import "context"

// Warm opens a connection to endpoint's push service if none is open, so
// that a push sent to it soon finds the handshakes done (h2.Client.Warm).
// It reports whether an HTTP/2 connection to it is open now: false for an
// origin reached over HTTP/1.1 (net/http dials per request as before), an
// endpoint that is not https or that the push itself would refuse
// (EndpointPolicy), or a dial that failed (the push will dial and report the
// failure itself).
func (s *Sender) Warm(ctx context.Context, endpoint string) bool {
	if s.h2 == nil {
		return false
	}
	u, err := s.policy.parseEndpoint(endpoint)
	if err != nil || u.Scheme != "https" {
		return false
	}
	open, err := s.h2.Warm(ctx, u.Host)
	return open && err == nil
}
