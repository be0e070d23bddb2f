package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// A device's language is the PUT's language member, else its
// Accept-Language; a malformed member is refused with INVALID_LANGUAGE and
// changes nothing stored.
func TestPutSubscriptionLanguage(t *testing.T) {
	s, fake := subscriptionServer(t, Config{AllowPrivateEndpoints: true})
	phone, laptop, tablet := fake.Subscribe(), fake.Subscribe(), fake.Subscribe()
	if got := putSubscription(t, s, testUserID, map[string]any{"subscription": phone, "language": "zh-CN"}); got.status != http.StatusOK {
		t.Fatalf("PUT with language = %d %s", got.status, got.body)
	}
	req := encryptedRequest(t, http.MethodPut, "/api/v1/push-subscription", testUserID, map[string]any{"subscription": laptop})
	req.Header.Set("Accept-Language", "en-GB,en;q=0.9,zh;q=0.5")
	if got := serve(s, req); got.status != http.StatusOK {
		t.Fatalf("PUT with Accept-Language = %d %s", got.status, got.body)
	}
	req = encryptedRequest(t, http.MethodPut, "/api/v1/push-subscription", testUserID, map[string]any{"subscription": tablet, "language": nil})
	req.Header.Del("Accept-Language")
	if got := serve(s, req); got.status != http.StatusOK {
		t.Fatalf("PUT with a null language and no Accept-Language = %d %s", got.status, got.body)
	}
	for _, bad := range []any{"english please", 7, "", "zh-CN-toolongsubtag", strings.Repeat("ab-", 12) + "ab"} {
		got := putSubscription(t, s, testUserID, map[string]any{"subscription": phone, "language": bad})
		if got.status != http.StatusBadRequest || !strings.Contains(got.body, `"INVALID_LANGUAGE"`) {
			t.Errorf("language %v: %d %s", bad, got.status, got.body)
		}
	}
	devices, err := s.deps.Store.Devices(t.Context(), testUserID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range devices {
		got[d.Subscription.Endpoint] = d.Language
	}
	want := map[string]string{phone.Endpoint: "zh-CN", laptop.Endpoint: "en-GB", tablet.Endpoint: ""}
	for endpoint, lang := range want {
		if got[endpoint] != lang {
			t.Errorf("languages %q, want %q", got, want)
			break
		}
	}
}

func TestDeviceLanguage(t *testing.T) {
	for _, tt := range []struct {
		member, accept, want string
		err                  bool
	}{
		{`"zh-CN"`, "en", "zh-CN", false},
		{`"zh_TW"`, "", "zh_TW", false},
		{`"zh-Hant-TW"`, "", "zh-Hant-TW", false},
		{``, "fr-CA;q=1, en", "fr-CA", false},
		{`null`, " de ", "de", false},
		{``, "*", "", false},
		{``, "garbage value!", "", false},
		{``, "", "", false},
		{`"e"`, "", "", true},
		{`"en-"`, "", "", true},
		{`"en--US"`, "", "", true},
		{`"1234"`, "", "", true},
		{`{"x":1}`, "", "", true},
	} {
		var member json.RawMessage
		if tt.member != "" {
			member = json.RawMessage(tt.member)
		}
		got, err := deviceLanguage(member, tt.accept)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("deviceLanguage(%s, %q) = %q, %v", tt.member, tt.accept, got, err)
		}
	}
}

func FuzzDeviceLanguage(f *testing.F) {
	for _, seed := range [][2]string{{`"zh-CN"`, ""}, {"", "en-GB,en;q=0.9"}, {`"x-"`, "*"}, {`7`, "zh_TW"}, {`"\u00e9"`, "é"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, member, accept string) {
		var raw json.RawMessage
		if member != "" {
			raw = json.RawMessage(member)
		}
		got, err := deviceLanguage(raw, accept)
		if err != nil && got != "" {
			t.Fatalf("an error with a language %q", got)
		}
		if got != "" && !isLanguageTag(got) {
			t.Fatalf("%q is not a language tag", got)
		}
	})
}
