package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"amsg/store"
)

// errorCode is the code of an error envelope, "" for anything else.
func errorCode(body string) string {
	var env struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal([]byte(body), &env)
	return env.Error.Code
}

func putPreferences(t testing.TB, h http.Handler, userID, body string) response {
	t.Helper()
	return send(h, http.MethodPut, "/api/v1/preferences", browserEncryptRaw(t, browserUserKey(userID), body), encryptedHeaders(userID))
}

func getPreferences(t testing.TB, h http.Handler, userID string) string {
	t.Helper()
	return openResponse(t, userID, send(h, http.MethodGet, "/api/v1/preferences", "", map[string]string{"X-User-Id": userID}))
}

// PUT /preferences merges: a member given replaces the stored one, null
// clears it, a member not given stays; GET reads them back. Plain JSON is
// accepted as well as the encrypted envelope.
func TestPreferencesMergeAndClear(t *testing.T) {
	s := newTestServer(t, Config{}, Deps{})
	if got := getPreferences(t, s, testUserID); got != `{"timeZone":null,"quietHours":null,"dailyLimit":null}` {
		t.Fatalf("preferences before any = %s", got)
	}
	got := openResponse(t, testUserID, putPreferences(t, s, testUserID,
		`{"timeZone":"europe/berlin","quietHours":{"start":"22:00","end":"07:30"},"dailyLimit":5}`))
	if want := `{"timeZone":"Europe/Berlin","quietHours":{"start":"22:00","end":"07:30"},"dailyLimit":5}`; got != want {
		t.Fatalf("PUT = %s, want %s", got, want)
	}
	plain := send(s, http.MethodPut, "/api/v1/preferences", `{"dailyLimit":null}`, map[string]string{"X-User-Id": testUserID})
	if got := openResponse(t, testUserID, plain); got != `{"timeZone":"Europe/Berlin","quietHours":{"start":"22:00","end":"07:30"},"dailyLimit":null}` {
		t.Fatalf("plain PUT clearing dailyLimit = %s", got)
	}
	openResponse(t, testUserID, putPreferences(t, s, testUserID, `{"quietHours":null,"timeZone":null}`))
	if got := getPreferences(t, s, testUserID); got != `{"timeZone":null,"quietHours":null,"dailyLimit":null}` {
		t.Fatalf("preferences after clearing all = %s", got)
	}
}

// Malformed preferences are refused whole with a precise code, and what was
// stored stays.
func TestPreferencesRefuseMalformedAndChangeNothing(t *testing.T) {
	s := newTestServer(t, Config{}, Deps{})
	stored := `{"timeZone":"Asia/Tokyo","quietHours":{"start":"23:00","end":"06:00"},"dailyLimit":2}`
	openResponse(t, testUserID, putPreferences(t, s, testUserID, stored))
	for _, c := range []struct{ body, code string }{
		{`[]`, "INVALID_PAYLOAD_FORMAT"},
		{`{"dailyLimit":1,"quiet":null}`, "UNKNOWN_PREFERENCE"},
		{`{"timeZone":"Mars/Olympus"}`, "INVALID_TIME_ZONE"},
		{`{"timeZone":""}`, "INVALID_TIME_ZONE"},
		{`{"timeZone":9}`, "INVALID_TIME_ZONE"},
		{`{"quietHours":{"start":"25:00","end":"07:00"}}`, "INVALID_QUIET_HOURS"},
		{`{"quietHours":{"start":"22:60","end":"07:00"}}`, "INVALID_QUIET_HOURS"},
		{`{"quietHours":{"start":"7:00","end":"22:00"}}`, "INVALID_QUIET_HOURS"},
		{`{"quietHours":{"start":"22:00"}}`, "INVALID_QUIET_HOURS"},
		{`{"quietHours":{"start":"22:00","end":"07:00","days":[]}}`, "INVALID_QUIET_HOURS"},
		{`{"quietHours":"22:00-07:00"}`, "INVALID_QUIET_HOURS"},
		{`{"quietHours":{"start":"22:00","end":"22:00"}}`, "QUIET_HOURS_EMPTY"},
		{`{"dailyLimit":-1}`, "INVALID_DAILY_LIMIT"},
		{`{"dailyLimit":1.5}`, "INVALID_DAILY_LIMIT"},
		{`{"dailyLimit":100001}`, "INVALID_DAILY_LIMIT"},
		{`{"dailyLimit":"3"}`, "INVALID_DAILY_LIMIT"},
		{`{"dailyLimit":3,"timeZone":"Nowhere/Land"}`, "INVALID_TIME_ZONE"},
	} {
		got := putPreferences(t, s, testUserID, c.body)
		if got.status != http.StatusBadRequest || errorCode(got.body) != c.code {
			t.Errorf("PUT %s = %d %s; want 400 %s", c.body, got.status, got.body, c.code)
		}
	}
	if got := getPreferences(t, s, testUserID); got != stored {
		t.Fatalf("preferences after refused PUTs = %s, want %s", got, stored)
	}
}

// FuzzDecodePreferences: any body is a change within bounds or an *Error,
// never a panic.
func FuzzDecodePreferences(f *testing.F) {
	for _, seed := range []string{
		`{"timeZone":"Asia/Tokyo","quietHours":{"start":"22:00","end":"07:00"},"dailyLimit":5}`,
		`{"timeZone":null,"quietHours":null,"dailyLimit":null}`, `{}`, `[]`, `null`, ``, `{"quietHours":{"start":"23:59","end":"00:00"}}`,
		`{"dailyLimit":1e3}`, `{"quietHours":{"start":"٢٢:00","end":"07:00"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := decodePreferences(body)
		if err != nil {
			if !errors.As(err, new(*Error)) {
				t.Fatalf("decodePreferences(%q) = %v; want an *Error", body, err)
			}
			return
		}
		p := c.apply(store.Preferences{})
		if q := p.QuietHours; q != nil && (q.Start == q.End || q.Start < 0 || q.End >= 24*60) {
			t.Fatalf("decodePreferences(%q) accepted quiet hours %+v", body, *q)
		}
		if l := p.DailyLimit; l != nil && (*l < 0 || *l > 100_000) {
			t.Fatalf("decodePreferences(%q) accepted daily limit %d", body, *l)
		}
	})
}
