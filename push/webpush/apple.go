package webpush

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"amsg/push"
)

// errPlaceholderForApple is the error of a send to an Apple endpoint while
// the VAPID subject is a placeholder Apple refuses (403 BadJwtToken).
var errPlaceholderForApple = errors.New("the VAPID subject is a placeholder that Apple's push service refuses; " +
	"set --vapid-subject / AMSG_VAPID_SUBJECT to a real contact address or https URL")

// isApplePushHost reports an endpoint host of Apple's push service
// (web.push.apple.com and its siblings).
func isApplePushHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return host == "push.apple.com" || strings.HasSuffix(host, ".push.apple.com")
}

// CompletedFromOutbox reports whether a push to endpoint may arrive cut, as
// a `_truncated` summary the service worker completes from GET /outbox (an
// Apple endpoint): the outbox must hold such a push before it is sent.
func CompletedFromOutbox(endpoint string) bool {
	// An endpoint that spells no Apple host anywhere, in any case, and
	// hides none in percent-encoding, names none: the courier asks for
	// every push, and most skip the parse.
	if !strings.Contains(endpoint, "%") && !containsFoldASCII(endpoint, "push.apple.com") {
		return false
	}
	u, err := url.Parse(endpoint)
	return err == nil && isApplePushHost(u.Hostname())
}

// containsFoldASCII reports whether s contains sub, an ASCII lower-case
// string, regardless of ASCII case: what strings.ToLower could make of s
// to find sub in it, for a sub without k (the Kelvin sign lowers to k).
func containsFoldASCII(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for j < len(sub) && s[i+j]|0x20 == sub[j] {
			j++
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

// truncatedMember is the root member a cut push carries so the page or the
// service worker fetches the whole push from /outbox. Its name is shared
// with sw/sw.js and the page.
const truncatedMember = "_truncated"

// ellipsis ends a cut message.
const ellipsis = "…"

// errNotCuttable is for a push with no message to cut: not a content push.
var errNotCuttable = errors.New("only a content push can be cut")

// cutPayload makes, once for every Apple device, the push that replaces
// `_multipart` chunks on Apple endpoints: iOS shows nothing for every chunk
// but the last, and counts each silent push against the subscription.
func (o *outgoing) cutPayload(s *Sender) ([]byte, error) {
	o.cutOnce.Do(func() { o.cut, o.cutErr = cutContent(o.Payload, o.ID, s.cfg.InlineBudget) })
	return o.cut, o.cutErr
}

// cutContent returns a content push that fits budget bytes: its message
// (and a notification body, if any, which repeats it) cut at a character
// boundary and ended with "…", and a root member
// "_truncated": {"messageId": id, "bytes": len(payload)}. It keeps the
// longest prefix that fits, found by bisection since JSON escaping makes
// the encoded size of a prefix uneven.
func cutContent(payload []byte, id string, budget int) ([]byte, error) {
	p, err := push.Decode(payload)
	if err != nil {
		return nil, err
	}
	c, ok := p.(*push.ContentPush)
	if !ok {
		return nil, errNotCuttable
	}
	marker, err := json.Marshal(struct {
		MessageID string `json:"messageId"`
		Bytes     int    `json:"bytes"`
	}{id, len(payload)})
	if err != nil {
		return nil, err
	}
	unknown := []push.Member{{Key: truncatedMember, Value: marker}}
	for _, m := range c.Unknown {
		if m.Key != truncatedMember {
			unknown = append(unknown, m)
		}
	}
	c.Unknown = unknown
	full := c.Message
	var body string
	var hasBody bool
	if c.Notification != nil {
		body, hasBody = c.Notification.Body.Get()
	}
	encode := func(n int) ([]byte, error) {
		c.Message = prefix(full, n) + ellipsis
		if hasBody {
			// A body already shorter (the builders cut it) stays as it is.
			cut := body
			if n < len(body) {
				cut = prefix(body, n) + ellipsis
			}
			c.Notification.Body = push.Some(cut)
		}
		return push.Encode(c)
	}
	best, err := encode(0)
	if err != nil {
		return nil, err
	}
	if len(best) > budget {
		return nil, fmt.Errorf("%w: even with an empty message the push is %d bytes, over the %d-byte budget",
			ErrInvalidMessage, len(best), budget)
	}
	lo, hi := 0, max(len(full), len(body)) // the longest prefix that fits is in [lo, hi]
	for lo < hi {
		mid := (lo + hi + 1) / 2
		b, err := encode(mid)
		if err != nil {
			return nil, err
		}
		if len(b) <= budget {
			lo, best = mid, b
		} else {
			hi = mid - 1
		}
	}
	return best, nil
}

// prefix is s cut to at most n bytes at a character boundary.
func prefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
