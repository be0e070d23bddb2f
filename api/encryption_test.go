package api

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"amsg/store/storetest"
	"amsg/store/usercrypt"
)

const testUserID = "550e8400-e29b-41d4-a716-446655440000"

// browserUserKey derives the user key the way the browser receives it from
// GET /get-user-key, independently of the code under test.
func browserUserKey(userID string) []byte {
	sum := sha256.Sum256([]byte(storetest.MasterKey + userID))
	return sum[:]
}

// browserEncrypt seals v as amsg-client does: AES-256-GCM, 12-byte IV,
// standard padded base64, tag detached.
func browserEncrypt(t testing.TB, key []byte, v any) string {
	t.Helper()
	plaintext, err := marshalJSON(v) // like JSON.stringify: no HTML escaping
	if err != nil {
		t.Fatal(err)
	}
	plaintext = plaintext[:len(plaintext)-1] // and no newline
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	iv := make([]byte, 12)
	sealed := aead.Seal(nil, iv, plaintext, nil)
	ct, tag := sealed[:len(plaintext)], sealed[len(plaintext):]
	enc := base64.StdEncoding
	body, _ := json.Marshal(map[string]string{"iv": enc.EncodeToString(iv), "authTag": enc.EncodeToString(tag), "encryptedData": enc.EncodeToString(ct)})
	return string(body)
}

// openResponse decrypts an encrypted read response the way amsg-client does
// and returns the plaintext JSON.
func openResponse(t testing.TB, userID string, got response) string {
	t.Helper()
	var resp struct {
		Success   bool               `json:"success"`
		Encrypted bool               `json:"encrypted"`
		Version   int                `json:"version"`
		Data      usercrypt.Envelope `json:"data"`
	}
	if err := json.Unmarshal([]byte(got.body), &resp); err != nil || got.status != http.StatusOK || !resp.Success || !resp.Encrypted || resp.Version != 1 {
		t.Fatalf("response %d %s is not an encrypted success (%v)", got.status, got.body, err)
	}
	dec := func(s string) []byte { b, _ := base64.StdEncoding.DecodeString(s); return b }
	block, _ := aes.NewCipher(browserUserKey(userID))
	aead, _ := cipher.NewGCM(block)
	plaintext, err := aead.Open(nil, dec(resp.Data.IV), append(dec(resp.Data.EncryptedData), dec(resp.Data.AuthTag)...), nil)
	if err != nil {
		t.Fatalf("decrypt response: %v", err)
	}
	return strings.TrimSuffix(string(plaintext), "\n")
}

// encryptedHeaders are amsg-client's headers on an encrypted call.
func encryptedHeaders(userID string) map[string]string {
	return map[string]string{"Content-Type": "application/json", "X-Payload-Encrypted": "true", "X-Encryption-Version": "1", "X-User-Id": userID}
}

// gateProbe serves the decrypted payload back, so tests see exactly what a
// handler behind the gate receives.
func gateProbe(s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		userID, payload, err := s.decryptRequest(w, r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeData(w, http.StatusOK, map[string]any{"userId": userID, "payload": payload})
	})
}

// encryptedRequest is a request with body encrypted as amsg-client does.
func encryptedRequest(t testing.TB, method, path, userID string, body any) *http.Request {
	return newRequest(method, path, browserEncrypt(t, browserUserKey(userID), body), encryptedHeaders(userID))
}

func TestEncryptedRequestGate(t *testing.T) {
	s := newTestServer(t, Config{MaxBodyBytes: 4096}, Deps{})
	h := gateProbe(s)
	key := browserUserKey(testUserID)
	good := browserEncrypt(t, key, map[string]any{"hello": "<world>", "n": 1})
	without := func(name string) map[string]string {
		m := encryptedHeaders(testUserID)
		delete(m, name)
		return m
	}
	with := func(name, value string) map[string]string {
		m := encryptedHeaders(testUserID)
		m[name] = value
		return m
	}
	var envelope map[string]string
	_ = json.Unmarshal([]byte(good), &envelope)
	urlSafe, _ := json.Marshal(map[string]string{
		"iv":            strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(envelope["iv"]), "="),
		"authTag":       strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(envelope["authTag"]), "="),
		"encryptedData": strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(envelope["encryptedData"]), "="),
	})

	for _, c := range []struct {
		name   string
		header map[string]string
		body   string
		status int
		code   string
	}{
		{"ok", encryptedHeaders(testUserID), good, http.StatusOK, ""},
		{"url-safe unpadded base64", encryptedHeaders(testUserID), string(urlSafe), http.StatusOK, ""},
		// Order: the encryption flag comes before the user id.
		{"not flagged encrypted", map[string]string{}, good, http.StatusBadRequest, "ENCRYPTION_REQUIRED"},
		{"flag false", with("X-Payload-Encrypted", "false"), good, http.StatusBadRequest, "ENCRYPTION_REQUIRED"},
		{"no user id", without("X-User-Id"), good, http.StatusBadRequest, "USER_ID_REQUIRED"},
		{"user id not v4", with("X-User-Id", "550e8400-e29b-11d4-a716-446655440000"), good, http.StatusBadRequest, "INVALID_USER_ID_FORMAT"},
		{"no version", without("X-Encryption-Version"), good, http.StatusBadRequest, "UNSUPPORTED_ENCRYPTION_VERSION"},
		{"version 2", with("X-Encryption-Version", "2"), good, http.StatusBadRequest, "UNSUPPORTED_ENCRYPTION_VERSION"},
		{"body not JSON", encryptedHeaders(testUserID), "nope", http.StatusBadRequest, "INVALID_ENCRYPTED_PAYLOAD"},
		{"iv not a string", encryptedHeaders(testUserID), `{"iv":1,"authTag":"a","encryptedData":"b"}`, http.StatusBadRequest, "INVALID_ENCRYPTED_PAYLOAD"},
		{"another user's key", encryptedHeaders("123e4567-e89b-42d3-a456-426614174000"), good, http.StatusBadRequest, "DECRYPTION_FAILED"},
		{"bad base64", encryptedHeaders(testUserID), `{"iv":"***","authTag":"a","encryptedData":"b"}`, http.StatusBadRequest, "DECRYPTION_FAILED"},
		{"plaintext not JSON", encryptedHeaders(testUserID), browserEncryptRaw(t, key, "not json"), http.StatusBadRequest, "INVALID_PAYLOAD_FORMAT"},
		{"plaintext an array", encryptedHeaders(testUserID), browserEncrypt(t, key, []int{1}), http.StatusBadRequest, "INVALID_PAYLOAD_FORMAT"},
		{"body too large", encryptedHeaders(testUserID), `{"iv":"` + strings.Repeat("A", 5000) + `"}`, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE"},
	} {
		got := post(h, "/probe", c.body, c.header)
		if got.status != c.status || (c.code != "" && !strings.Contains(got.body, `"code":"`+c.code+`"`)) {
			t.Errorf("%s: %d %s, want %d %s", c.name, got.status, got.body, c.status, c.code)
		}
		if c.code == "" && got.body != `{"success":true,"data":{"payload":{"hello":"<world>","n":1},"userId":"`+testUserID+`"}}`+"\n" {
			t.Errorf("%s: body %s", c.name, got.body)
		}
	}
}

// browserEncryptRaw seals raw bytes that need not be JSON.
func browserEncryptRaw(t testing.TB, key []byte, plaintext string) string {
	t.Helper()
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	iv := make([]byte, 12)
	sealed := aead.Seal(nil, iv, []byte(plaintext), nil)
	enc := base64.StdEncoding
	body, _ := json.Marshal(map[string]string{"iv": enc.EncodeToString(iv),
		"authTag": enc.EncodeToString(sealed[len(plaintext):]), "encryptedData": enc.EncodeToString(sealed[:len(plaintext)])})
	return string(body)
}

func TestGetUserKey(t *testing.T) {
	s := newTestServer(t, Config{}, Deps{})
	got := do(t, s, http.MethodGet, "/api/v1/get-user-key", map[string]string{"X-User-Id": testUserID})
	want := `{"success":true,"data":{"userKey":"` + hex.EncodeToString(browserUserKey(testUserID)) + `","version":1}}` + "\n"
	if got.status != http.StatusOK || got.body != want {
		t.Errorf("get-user-key = %d %s, want %s", got.status, got.body, want)
	}
	if got := do(t, s, http.MethodGet, "/api/v1/get-user-key", nil); got.status != http.StatusBadRequest || !strings.Contains(got.body, "USER_ID_REQUIRED") {
		t.Errorf("without user id = %d %s", got.status, got.body)
	}
	// The id is used as sent: another spelling is another user.
	upper := strings.ToUpper(testUserID)
	got = do(t, s, http.MethodGet, "/api/v1/get-user-key", map[string]string{"X-User-Id": upper})
	if !strings.Contains(got.body, hex.EncodeToString(browserUserKey(upper))) {
		t.Errorf("upper-case id = %s", got.body)
	}
}

func TestEncryptedResponseOpensWithTheBrowserKey(t *testing.T) {
	s := newTestServer(t, Config{}, Deps{})
	rec := httptest.NewRecorder()
	if err := s.writeEncrypted(rec, testUserID, map[string]string{"a": "<b>"}); err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Success   bool               `json:"success"`
		Encrypted bool               `json:"encrypted"`
		Version   int                `json:"version"`
		Data      usercrypt.Envelope `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || !resp.Success || !resp.Encrypted || resp.Version != 1 {
		t.Fatalf("envelope %s (%v)", rec.Body.String(), err)
	}
	dec := func(s string) []byte { b, _ := base64.StdEncoding.DecodeString(s); return b }
	block, _ := aes.NewCipher(browserUserKey(testUserID))
	aead, _ := cipher.NewGCM(block)
	plaintext, err := aead.Open(nil, dec(resp.Data.IV), append(dec(resp.Data.EncryptedData), dec(resp.Data.AuthTag)...), nil)
	if err != nil || string(plaintext) != `{"a":"<b>"}`+"\n" {
		t.Errorf("decrypted %q, %v", plaintext, err)
	}
}

// FuzzEncryptedRequestGate throws arbitrary headers and bodies at the gate:
// it must answer with one of the standard's 4xx codes or succeed, never 500.
func FuzzEncryptedRequestGate(f *testing.F) {
	key := browserUserKey(testUserID)
	f.Add("true", testUserID, "1", browserEncrypt(f, key, map[string]int{"a": 1}))
	f.Add("true", testUserID, "1", `{"iv":"AAAAAAAAAAAAAAAA","authTag":"TaEAwMLMNwKiERAL7wQkvA==","encryptedData":"2bNvBRG79g=="}`)
	f.Add("true", testUserID, "1", `{"iv":"","authTag":"","encryptedData":""}`)
	f.Add("true", testUserID, "1", `[]`)
	f.Add("", "", "", "")
	s := newTestServer(f, Config{MaxBodyBytes: 1 << 16}, Deps{})
	h := gateProbe(s)
	allowed := map[int]bool{http.StatusOK: true, http.StatusBadRequest: true, http.StatusRequestEntityTooLarge: true}
	f.Fuzz(func(t *testing.T, flag, userID, version, body string) {
		header := map[string]string{"X-Payload-Encrypted": flag, "X-User-Id": userID, "X-Encryption-Version": version}
		for k, v := range header {
			if strings.ContainsAny(v, "\r\n\x00") {
				delete(header, k) // not representable in an HTTP header
			}
		}
		got := post(h, "/probe", body, header)
		if !allowed[got.status] || !strings.HasPrefix(got.body, `{"success":`) {
			t.Fatalf("status %d body %q", got.status, got.body)
		}
	})
}
