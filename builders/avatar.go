package builders

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"amsg/push"
)

// AvatarURLMaxLength is the longest avatarUrl kept, in UTF-16 code units
// (JavaScript's String length), as the standard counts it.
const AvatarURLMaxLength = 2048

// CheckAvatarURL applies the standard's soft-clear to an avatarUrl as it
// arrived: any JSON value, nil when the member was absent. It returns the
// value to use and, when it cleared one, a Warning for the caller to log; it
// never fails, because a cosmetic field must not sink a push.
//
// Absent stays absent (nil) and null stays null. A string is kept (v is
// returned as given) unless, checked in this order, it starts with "data:" in
// any case, is longer than AvatarURLMaxLength, or is not an absolute https
// URL with a host: the standard documents https only, and a javascript: or
// http: avatar reaches every worker that shows it (issue 22). Anything else,
// and any value that is not a string, becomes null. Request handlers call it at
// their boundary; the builders call it again, which is harmless.
func CheckAvatarURL(v json.RawMessage) (json.RawMessage, *Warning) {
	if _, w := checkAvatarURL(v); w != nil {
		return json.RawMessage("null"), w
	}
	return v, nil
}

func checkAvatarURL(v json.RawMessage) (push.Optional[string], *Warning) {
	trimmed := bytes.TrimSpace(v)
	switch {
	case len(trimmed) == 0:
		return push.Optional[string]{}, nil
	case string(trimmed) == "null":
		return push.Null[string](), nil
	}
	clear := func(rule Rule, detail string) (push.Optional[string], *Warning) {
		return push.Null[string](), &Warning{Field: "avatarUrl", Rule: rule, Detail: detail}
	}
	var s string
	if trimmed[0] != '"' || json.Unmarshal(trimmed, &s) != nil {
		return clear(RuleType, "must be a string")
	}
	if len(s) >= 5 && strings.EqualFold(s[:5], "data:") {
		return clear(RuleDataURI, "must be an https:// image URL, not a data: URI")
	}
	if n := push.JSLength(s); n > AvatarURLMaxLength {
		return clear(RuleTooLong, fmt.Sprintf("is %d UTF-16 code units long, over %d", n, AvatarURLMaxLength))
	}
	if u, err := url.Parse(s); err != nil || !strings.EqualFold(u.Scheme, "https") || u.Host == "" {
		return clear(RuleURL, "must be an absolute https URL")
	}
	return push.Some(s), nil
}
