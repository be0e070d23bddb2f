package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"amsg/push/netguard"
	"amsg/store"
)

// URLError says why a receiver's URL is refused.
type URLError struct{ Reason string }

func (e *URLError) Error() string { return "webhook url " + e.Reason }

// URLPolicy decides which receivers an endpoint may name: by default an
// https URL whose host resolves to public addresses only, checked again on
// every dial; AllowPrivate (--webhook-allow-private) also admits http and
// loopback or private hosts. Any port is allowed: a receiver is the
// operator's own service, wherever it listens.
type URLPolicy struct {
	AllowPrivate bool
	Resolver     netguard.Resolver // nil: the system's
}

// Check refuses raw with a *URLError, or returns the context's error when
// the lookup was cut short.
func (p URLPolicy) Check(ctx context.Context, raw string) error {
	refuse := func(format string, a ...any) error { return &URLError{Reason: fmt.Sprintf(format, a...)} }
	if strings.TrimSpace(raw) == "" {
		return refuse("is missing")
	}
	if len(raw) > store.MaxWebhookURLBytes {
		return refuse("is longer than %d bytes", store.MaxWebhookURLBytes)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Opaque != "":
		return refuse("is not a URL")
	case u.Scheme != "https" && !(u.Scheme == "http" && p.AllowPrivate):
		return refuse("must be an https URL")
	case u.User != nil:
		return refuse("must not carry credentials: sign with the endpoint's secret instead")
	case u.Fragment != "":
		return refuse("must not have a fragment")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	switch {
	case host == "":
		return refuse("has no host")
	case host == "invalid" || strings.HasSuffix(host, ".invalid"):
		return refuse("host %s is under .invalid, which never resolves", host)
	case p.AllowPrivate:
		return nil
	case netguard.IsLocalName(host):
		return refuse("host %s is local (--webhook-allow-private admits it)", host)
	}
	refusal, err := netguard.CheckHost(ctx, p.Resolver, host)
	switch {
	case errors.Is(err, netguard.ErrUnresolved):
		return refuse("host %s does not resolve", host)
	case err != nil:
		return err
	case refusal != nil:
		return refuse("%s (--webhook-allow-private admits it)", refusal.Reason(host))
	}
	return nil
}
