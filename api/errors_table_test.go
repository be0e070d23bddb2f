package api

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"amsg/push/errcode"
)

// TestEveryCodeInBothLanguages walks the error table through writeError:
// without Accept-Language each message is its English (its code's General
// English when it has none of its own), with zh-CN the Chinese text byte
// for byte.
func TestEveryCodeInBothLanguages(t *testing.T) {
	s := &Server{log: testLogger(t)}
	for _, m := range errcode.Table() {
		if m.Status() == 0 {
			continue // never an answer's own code
		}
		english := cmp.Or(m.English(), m.General().English())
		for _, lang := range []struct{ header, want string }{{"", english}, {"zh-CN", m.Chinese()}, {"en-US,zh;q=0.5", english}, {"zh-TW;q=0.9,en;q=0.8", m.Chinese()}} {
			req := httptest.NewRequest(http.MethodGet, "/api/v1/x", nil)
			if lang.header != "" {
				req.Header.Set("Accept-Language", lang.header)
			}
			rec := httptest.NewRecorder()
			s.writeError(rec, req, fail(m))
			var body struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if rec.Code != m.Status() || body.Error.Code != m.Code() || body.Error.Message != lang.want {
				t.Errorf("%s with Accept-Language %q: got %d %s %q, want %d %q", m.Code(), lang.header, rec.Code, body.Error.Code, body.Error.Message, m.Status(), lang.want)
			}
		}
	}
}

// TestGeneralEnglish covers messages without English of their own: they
// get their code's General English with the reason or the fields their
// details name; a quoted text is said as it is in both languages.
func TestGeneralEnglish(t *testing.T) {
	for _, tc := range []struct {
		err  *Error
		want string
	}{
		{invalidFields(errcode.CredIDsOver.With(100), "credIds"), "Missing or invalid parameters: credIds"},
		{missingFields(errcode.FieldRequired.With("apiUrl"), "apiUrl"), "Invalid request payload: apiUrl"},
		{fail(errcode.BodyTooLarge.With(1024)).withDetails(map[string]any{"maxBytes": 1024}), "The payload is too large"},
		{fail(errcode.LLMCallFailed.Quoting("LLM answered 401 Unauthorized")), "LLM answered 401 Unauthorized"},
		{fail(errcode.SubscriptionRefused.With("推送订阅无效：x", "must be an https URL")), "Invalid push subscription: must be an https URL"},
		{invalidPayload(errcode.FieldBlank.With("charId"), map[string]any{"reason": "blank", "invalidFields": []string{"charId"}}), "Invalid request payload: blank"},
		{invalidUpdate(errcode.InvalidParameters, "completePrompt"), "Invalid update data: completePrompt"},
	} {
		if got := englishMessage(tc.err); got != tc.want {
			t.Errorf("englishMessage(%s %q) = %q, want %q", tc.err.Code, tc.err.Message, got, tc.want)
		}
	}
}

func TestPrefersChinese(t *testing.T) {
	for header, want := range map[string]bool{
		"":                        false,
		"zh":                      true,
		"ZH-cn":                   true,
		"zh-Hant-TW,en;q=0.9":     true,
		"en-US,en;q=0.9,zh;q=0.8": false,
		"en;q=0.5,zh-CN;q=0.9":    true,
		"zhx":                     false,
		"*":                       false,
		"zh;q=0":                  false,
		"zh;q=abc,en":             false,
		"en;q=1,zh;q=1":           false,
		",,;,zh":                  true,
	} {
		if got := prefersChinese(header); got != want {
			t.Errorf("prefersChinese(%q) = %v, want %v", header, got, want)
		}
	}
}

func FuzzPrefersChinese(f *testing.F) {
	for _, seed := range []string{"", "zh-CN", "en;q=0.5,zh;q=0.9", "zh;q=1e400", strings.Repeat("zh,", 100)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		if prefersChinese(header) && !strings.Contains(strings.ToLower(header), "zh") {
			t.Fatalf("prefersChinese(%q) without zh in it", header)
		}
	})
}

// TestEndpointsAnswerInEnglishByDefault goes through the real router: the
// same failure is English without Accept-Language and the standard's text
// with zh-CN.
func TestEndpointsAnswerInEnglishByDefault(t *testing.T) {
	srv := httptest.NewServer(newTestServer(t, Config{}, Deps{}))
	defer srv.Close()
	for header, want := range map[string]string{
		"":      `{"success":false,"error":{"code":"USER_ID_REQUIRED","message":"Missing user id (X-User-Id)"}}` + "\n",
		"zh-CN": `{"success":false,"error":{"code":"USER_ID_REQUIRED","message":"缺少用户标识符"}}` + "\n",
	} {
		req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/api/v1/client-state", nil)
		if header != "" {
			req.Header.Set("Accept-Language", header)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != want {
			t.Errorf("Accept-Language %q: got %s, want %s", header, body, want)
		}
	}
}
