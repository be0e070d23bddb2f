package builders_test

import (
	"encoding/json"
	"strings"
	"testing"

	"amsg/builders"
	"amsg/push"
)

// jsonString quotes s as a JSON string.
func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func TestCheckAvatarURL(t *testing.T) {
	long := "https://cdn.example/" + strings.Repeat("a", builders.AvatarURLMaxLength-len("https://cdn.example/"))
	// An astral character counts two UTF-16 code units, as JavaScript's
	// length does: 2046 ASCII + one emoji is exactly 2048.
	astral := "https://cdn.example/" + strings.Repeat("a", builders.AvatarURLMaxLength-len("https://cdn.example/")-2) + "🙂"
	for _, tc := range []struct {
		name string
		in   json.RawMessage
		out  json.RawMessage // what CheckAvatarURL returns
		rule builders.Rule   // the warning's rule; "" for none
	}{
		{"absent", nil, nil, ""},
		{"null", raw(`null`), raw(`null`), ""},
		{"https", raw(`"https://cdn.example/rei.png"`), raw(`"https://cdn.example/rei.png"`), ""},
		{"https upper case", raw(`"HTTPS://cdn.example/rei.png"`), raw(`"HTTPS://cdn.example/rei.png"`), ""},
		// The standard documents https only; upstream never enforced it,
		// amsg does (issue 22).
		{"http", raw(`"http://cdn.example/rei.png"`), raw(`null`), builders.RuleURL},
		{"javascript", raw(`"javascript:alert(1)"`), raw(`null`), builders.RuleURL},
		{"ftp", raw(`"ftp://cdn.example/rei.png"`), raw(`null`), builders.RuleURL},
		{"exactly 2048", jsonString(long), jsonString(long), ""},
		{"exactly 2048 with an astral character", jsonString(astral), jsonString(astral), ""},
		{"number", raw(`5`), raw(`null`), builders.RuleType},
		{"boolean", raw(`false`), raw(`null`), builders.RuleType},
		{"object", raw(`{"url":"https://cdn.example/a.png"}`), raw(`null`), builders.RuleType},
		{"array", raw(`["https://cdn.example/a.png"]`), raw(`null`), builders.RuleType},
		{"not JSON", raw(`"https://cdn`), raw(`null`), builders.RuleType},
		{"data URI", raw(`"data:image/png;base64,iVBORw0KGgo="`), raw(`null`), builders.RuleDataURI},
		{"data URI upper case", raw(`"DATA:image/png;base64,iVBORw0KGgo="`), raw(`null`), builders.RuleDataURI},
		{"data URI mixed case", raw(`"DaTa:,x"`), raw(`null`), builders.RuleDataURI},
		{"data URI over the length limit", jsonString("data:" + strings.Repeat("A", 5000)), raw(`null`), builders.RuleDataURI},
		{"2049", jsonString(long + "a"), raw(`null`), builders.RuleTooLong},
		{"2049 with an astral character", jsonString(astral + "a"), raw(`null`), builders.RuleTooLong},
		{"empty", raw(`""`), raw(`null`), builders.RuleURL},
		{"relative", raw(`"/avatars/rei.png"`), raw(`null`), builders.RuleURL},
		{"no scheme", raw(`"cdn.example/rei.png"`), raw(`null`), builders.RuleURL},
		{"https without host", raw(`"https:///rei.png"`), raw(`null`), builders.RuleURL},
		{"space in host", raw(`"https://cdn example/rei.png"`), raw(`null`), builders.RuleURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, w := builders.CheckAvatarURL(tc.in)
			if string(out) != string(tc.out) {
				t.Errorf("value %s, want %s", out, tc.out)
			}
			switch {
			case tc.rule == "" && w != nil:
				t.Errorf("unexpected warning %v", w)
			case tc.rule != "" && (w == nil || w.Rule != tc.rule || w.Field != "avatarUrl"):
				t.Errorf("warning %v, want rule %s", w, tc.rule)
			}
		})
	}
}

// The builders soft-clear too: the push is built, with avatarUrl null and
// the warning returned.
func TestBuildersSoftClearAvatarURL(t *testing.T) {
	in := raw(`"data:image/png;base64,AAAA"`)
	cp, warnings, err := fixed.BuildContentPush(builders.ContentArgs{Common: instant(), Message: "hi", AvatarURL: in})
	if err != nil || !cp.AvatarURL.IsNull() || len(warnings) != 1 || warnings[0].Rule != builders.RuleDataURI {
		t.Fatalf("content: %v %#v %v", err, cp, warnings)
	}
	if got := warnings[0].String(); !strings.Contains(got, "avatarUrl cleared to null") {
		t.Errorf("warning text %q", got)
	}
	rp, warnings, err := fixed.BuildReasoningPush(builders.ReasoningArgs{Common: instant(), ReasoningContent: "plan", AvatarURL: raw(`42`)})
	if err != nil || !rp.AvatarURL.IsNull() || len(warnings) != 1 || warnings[0].Rule != builders.RuleType {
		t.Fatalf("reasoning: %v %#v %v", err, rp, warnings)
	}
	out, _ := push.Encode(rp)
	if !strings.Contains(string(out), `"avatarUrl":null`) {
		t.Fatalf("encoded %s", out)
	}
}
