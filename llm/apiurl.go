package llm

import (
	"amsg/push"
	"amsg/push/netguard"

	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"syscall"
)

// ErrInvalidAPIURL marks an apiUrl that is empty or not an absolute http(s)
// URL. The *Error carrying it has the standard's message.
var ErrInvalidAPIURL = errors.New("invalid apiUrl")

var versionSuffix = regexp.MustCompile(`/v[0-9]+$`)

// NormalizeAPIURL turns the apiUrl a caller gives into the chat-completions
// endpoint the standard calls: trailing slashes are stripped from the path; a
// bare host gets /v1/chat/completions; a path ending in a version segment
// (/v1, /v2, …, case-sensitive) gets /chat/completions; a path ending in
// /chat/completions and any other custom path are kept. Query and fragment
// are kept, the host is lowercased and a default port dropped, as the WHATWG
// serialisation does. Applying it twice gives the same result as once.
//
// Unlike the standard, which accepts any absolute URL here and fails later
// inside fetch, only http and https URLs with a host are accepted.
func NormalizeAPIURL(apiURL string) (string, error) {
	trimmed := push.JSTrim(apiURL)
	if trimmed == "" {
		return "", &Error{kind: ErrInvalidAPIURL, msg: "Invalid apiUrl: apiUrl is required. Please provide a chat endpoint URL " +
			"(for example: https://api.openai.com or https://api.openai.com/v1/chat/completions)."}
	}
	invalid := &Error{kind: ErrInvalidAPIURL, msg: fmt.Sprintf("Invalid apiUrl: %q. Please provide a valid absolute URL.", apiURL)}
	u, err := url.Parse(trimmed)
	if err != nil {
		invalid.cause = err
		return "", invalid
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Hostname() == "" || u.Opaque != "" {
		return "", invalid
	}

	host := strings.ToLower(u.Host)
	if port := u.Port(); (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		host = strings.TrimSuffix(host, ":"+port)
	}
	host = strings.TrimSuffix(host, ":") // "x:" has an empty port, which WHATWG drops

	path := strings.TrimRight(u.EscapedPath(), "/")
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
	case path == "":
		path = "/v1/chat/completions"
	case versionSuffix.MatchString(path):
		path += "/chat/completions"
	}

	var b strings.Builder
	b.WriteString(scheme)
	b.WriteString("://")
	if u.User != nil {
		b.WriteString(u.User.String())
		b.WriteByte('@')
	}
	b.WriteString(host)
	b.WriteString(path)
	if u.ForceQuery || u.RawQuery != "" {
		b.WriteByte('?')
		b.WriteString(percentEncode(u.RawQuery, ` "#<>'`))
	}
	if u.Fragment != "" {
		b.WriteByte('#')
		b.WriteString(percentEncode(u.EscapedFragment(), " \"<>`"))
	}
	return b.String(), nil
}

// percentEncode escapes control bytes, non-ASCII bytes and the bytes in set,
// as the WHATWG serialiser does for queries and fragments, so that a
// normalised URL survives being trimmed and normalised again.
func percentEncode(s, set string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 0x20 || c >= 0x7F || strings.IndexByte(set, c) >= 0 {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// URLPolicy decides which LLM endpoints a caller may make the server call.
// By default only hosts whose every address is public: an apiUrl is the
// caller's choice of host, port, path and body, so without it any caller
// could reach the server's internal network (SSRF). AllowPrivate admits
// loopback and private networks (a local model, tests). The operator's
// default model is not subject to it.
type URLPolicy struct {
	AllowPrivate bool
	Resolver     netguard.Resolver // nil means net.DefaultResolver
}

// Check normalizes apiURL and refuses it (an *Error of kind
// ErrInvalidAPIURL) when its host is local, or is or resolves to an address
// that is not public. A name that does not resolve passes: it reaches
// nothing. The client checks every address again when it dials,
// so a host that re-resolves elsewhere later is refused then too.
func (p URLPolicy) Check(ctx context.Context, apiURL string) error {
	endpoint, err := NormalizeAPIURL(apiURL)
	if err != nil || p.AllowPrivate {
		return err
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return &Error{kind: ErrInvalidAPIURL, msg: "Invalid apiUrl: it is not a valid absolute URL.", cause: err}
	}
	host := strings.TrimSuffix(u.Hostname(), ".")
	refuse := func(why string) error {
		return &Error{kind: ErrInvalidAPIURL, msg: fmt.Sprintf("Invalid apiUrl: host %s is %s; only public hosts may be called.", host, why)}
	}
	if netguard.IsLocalName(host) {
		return refuse("local")
	}
	refusal, err := netguard.CheckHost(ctx, p.Resolver, host)
	switch {
	case errors.Is(err, netguard.ErrUnresolved):
		// Not an SSRF: the call will fail, and the dial check still holds
		// if the name resolves by then.
		return nil
	case err != nil:
		return err
	case refusal == nil:
		return nil
	case refusal.Literal:
		return refuse(refusal.Why)
	}
	return refuse("resolving to " + refusal.Why)
}

// errRefusedAddress is the dial error for an address the policy refuses.
var errRefusedAddress = errors.New("LLM endpoint address refused")

// dialControl vets every address the client dials, after DNS resolution,
// so DNS rebinding cannot reach a private network; nil when private
// addresses are allowed.
func (p URLPolicy) dialControl() func(network, address string, c syscall.RawConn) error {
	if p.AllowPrivate {
		return nil
	}
	return netguard.RefusePrivate(errRefusedAddress)
}

// displayURL is an endpoint as errors and logs may show it: credentials
// dropped and query values masked, since callers put API keys there.
func displayURL(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"redacted"}
		}
		u.RawQuery = q.Encode()
	}
	u.Fragment = ""
	return u.String()
}
