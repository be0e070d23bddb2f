package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"amsg/push/courier"
	"amsg/push/pushtest"
	"amsg/push/webpush"
	"amsg/scheduler"
	"amsg/store"
	"amsg/store/storetest"

	"github.com/prometheus/client_golang/prometheus"
)

// newTestServer builds a server on a fresh store whose pushes go to a fake
// push service (see newTestDeps), unless deps says otherwise.
func newTestServer(t testing.TB, cfg Config, deps Deps) *Server {
	t.Helper()
	if _, fuzzing := t.(*testing.F); fuzzing {
		// A fuzzer sends thousands of requests a second from one address
		// as one user: with the rate limits on, every input past the burst
		// would meet 429 before the code under test (issue 22).
		cfg.Limits.RateLimitOff = true
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	if deps.Store == nil {
		deps.Store = storetest.New(t)
	}
	if deps.Courier == nil {
		deps.Courier, _ = newTestCourier(t, deps.Store, courier.PolicyUpstream)
	}
	if deps.Broadcasts == nil {
		deps.Broadcasts = scheduler.NewBroadcasts(deps.Store, scheduler.BroadcastConfig{Logger: cfg.Logger})
	}
	s, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := deps.Broadcasts.Start(s); err != nil {
		t.Fatal(err)
	}
	// A broadcast runs on after its POST answers: it must end before the
	// store closes and the test's log goes (cleanups run last-in first-out).
	t.Cleanup(deps.Broadcasts.Wait)
	return s
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// newTestCourier is the server's real sender and courier under policy,
// sending to a fake push service that verifies and decrypts what arrives.
func newTestCourier(t testing.TB, st *store.Store, policy courier.Policy) (*courier.Courier, *pushtest.Server) {
	t.Helper()
	sec := st.Secrets()
	fake := pushtest.NewServer(sec.VAPIDPublicKey)
	t.Cleanup(fake.Close)
	sender, err := webpush.NewSender(webpush.Config{
		VAPIDPublicKey: sec.VAPIDPublicKey, VAPIDPrivateKey: sec.VAPIDPrivateKey,
		Subject: "https://amsg.example.org/contact", AllowPrivateEndpoints: true, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	return courier.New(sender, st, courier.Config{Policy: policy, Logger: testLogger(t)}), fake
}

type response struct {
	status int
	header http.Header
	body   string
}

// newRequest builds a request that, unless header says otherwise, prefers
// Chinese: the endpoint tests check the standard's exact texts.
func newRequest(method, path, body string, header map[string]string) *http.Request {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Accept-Language", "zh-CN")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return req
}

func serve(h http.Handler, req *http.Request) response {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{rec.Code, rec.Result().Header, rec.Body.String()}
}

func do(t *testing.T, h http.Handler, method, path string, header map[string]string) response {
	t.Helper()
	return serve(h, newRequest(method, path, "", header))
}

func post(h http.Handler, path, body string, header map[string]string) response {
	return serve(h, newRequest(http.MethodPost, path, body, header))
}

// send serves one request with a body and returns the response.
func send(h http.Handler, method, path, body string, header map[string]string) response {
	return serve(h, newRequest(method, path, body, header))
}

func TestRoutesMatchBySuffixLikeTheSingleUserServer(t *testing.T) {
	s := newTestServer(t, Config{}, Deps{})
	want := `{"success":true,"publicKey":"` + s.deps.Store.Secrets().VAPIDPublicKey + `"}` + "\n"
	for _, path := range []string{
		"/api/v1/vapid-public-key",
		"/api/v1/vapid-public-key/",
		"/vapid-public-key",
		"/amsg/vapid-public-key//",
		"/some/prefix/api/vapid-public-key",
	} {
		got := do(t, s, http.MethodGet, path, nil)
		if got.status != http.StatusOK || got.body != want {
			t.Errorf("GET %s = %d %q, want 200 %q", path, got.status, got.body, want)
		}
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/no-such-route"},
		{http.MethodPost, "/api/v1/vapid-public-key"}, // right name, wrong method
		{http.MethodGet, "/api/v1/xvapid-public-key"}, // a suffix of the name is not the name
		{http.MethodGet, "/"},                         // no web handler configured
	} {
		got := do(t, s, c.method, c.path, nil)
		if got.status != http.StatusNotFound || got.body != `{"success":false,"error":{"code":"NOT_FOUND","message":"Unknown route"}}`+"\n" {
			t.Errorf("%s %s = %d %q, want the JSON 404", c.method, c.path, got.status, got.body)
		}
		if ct := got.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("%s %s Content-Type = %q", c.method, c.path, ct)
		}
	}
}

func TestWebHandlerServesOnlyNonAPIGets(t *testing.T) {
	web := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "page "+r.URL.Path) })
	s := newTestServer(t, Config{}, Deps{Web: web})
	if got := do(t, s, http.MethodGet, "/", nil); got.body != "page /" {
		t.Errorf("GET / = %q", got.body)
	}
	if got := do(t, s, http.MethodGet, "/app.js", nil); got.body != "page /app.js" {
		t.Errorf("GET /app.js = %q", got.body)
	}
	if got := do(t, s, http.MethodGet, "/api/v1/nothing", nil); got.status != http.StatusNotFound || !strings.Contains(got.body, "NOT_FOUND") {
		t.Errorf("GET /api/v1/nothing = %d %q, want the JSON 404", got.status, got.body)
	}
	if got := do(t, s, http.MethodPost, "/", nil); got.status != http.StatusNotFound || !strings.Contains(got.body, "NOT_FOUND") {
		t.Errorf("POST / = %d %q, want the JSON 404", got.status, got.body)
	}
}

func TestCapabilitiesListsImplementedFeatures(t *testing.T) {
	s := newTestServer(t, Config{ServerVersion: "1.2.3"}, Deps{})
	got := do(t, s, http.MethodGet, "/api/v1/capabilities", nil)
	var body struct {
		Success       bool     `json:"success"`
		ServerVersion string   `json:"serverVersion"`
		Features      []string `json:"features"`
	}
	if err := json.Unmarshal([]byte(got.body), &body); err != nil {
		t.Fatal(err)
	}
	if !body.Success || body.ServerVersion != "1.2.3" || len(body.Features) == 0 || body.Features[0] != "vapid-public-key" ||
		!slices.Contains(body.Features, "apple-web-push") || strings.Contains(got.body, "warnings") {
		t.Errorf("capabilities = %s", got.body)
	}
}

// TestCapabilitiesWarnOfRefusedApplePush: with a placeholder VAPID subject
// the server neither claims Apple devices nor keeps quiet about it.
func TestCapabilitiesWarnOfRefusedApplePush(t *testing.T) {
	s := newTestServer(t, Config{ApplePushRefused: true}, Deps{})
	got := do(t, s, http.MethodGet, "/api/v1/capabilities", nil)
	var body struct {
		Features []string `json:"features"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(got.body), &body); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(body.Features, "apple-web-push") || len(body.Warnings) != 1 || !strings.Contains(body.Warnings[0], "VAPID subject") {
		t.Errorf("capabilities = %s", got.body)
	}
}

func TestClientToken(t *testing.T) {
	s := newTestServer(t, Config{ClientToken: "s3cret"}, Deps{})
	for _, c := range []struct {
		name   string
		header map[string]string
		status int
	}{
		{"missing", nil, http.StatusUnauthorized},
		{"wrong", map[string]string{"X-Client-Token": "nope"}, http.StatusUnauthorized},
		{"prefix", map[string]string{"X-Client-Token": "s3cre"}, http.StatusUnauthorized},
		{"right", map[string]string{"X-Client-Token": "s3cret"}, http.StatusOK},
		{"right with spaces", map[string]string{"X-Client-Token": "  s3cret "}, http.StatusOK},
	} {
		got := do(t, s, http.MethodGet, "/api/v1/capabilities", c.header)
		if got.status != c.status {
			t.Errorf("%s: status %d, want %d (%s)", c.name, got.status, c.status, got.body)
		}
		if c.status == http.StatusUnauthorized && got.body != `{"success":false,"error":{"code":"INVALID_CLIENT_TOKEN","message":"共享密钥无效或缺失"}}`+"\n" {
			t.Errorf("%s: body %s", c.name, got.body)
		}
	}
	// Health checks stay open so orchestrators need no secret.
	if got := do(t, s, http.MethodGet, "/healthz", nil); got.status != http.StatusOK {
		t.Errorf("healthz with token configured = %d", got.status)
	}
}

func TestCORS(t *testing.T) {
	t.Run("off", func(t *testing.T) {
		s := newTestServer(t, Config{}, Deps{})
		got := do(t, s, http.MethodOptions, "/api/v1/capabilities", map[string]string{"Origin": "https://app.example"})
		if got.status != http.StatusNotFound || got.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight with CORS off = %d %v", got.status, got.header)
		}
	})
	t.Run("any origin", func(t *testing.T) {
		s := newTestServer(t, Config{CORSOrigin: "*", ClientToken: "t"}, Deps{})
		got := do(t, s, http.MethodOptions, "/api/v1/capabilities", map[string]string{"Origin": "https://app.example"})
		if got.status != http.StatusNoContent || got.header.Get("Access-Control-Allow-Origin") != "*" ||
			!strings.Contains(got.header.Get("Access-Control-Allow-Headers"), "X-Amsg-Request-Encoding") ||
			got.header.Get("Access-Control-Max-Age") != "86400" || got.header.Get("Vary") != "" {
			t.Errorf("preflight = %d %v", got.status, got.header)
		}
		// An error response carries the headers too, or browsers report a network failure.
		got = do(t, s, http.MethodGet, "/api/v1/capabilities", map[string]string{"Origin": "https://app.example"})
		if got.status != http.StatusUnauthorized || got.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("401 = %d %v", got.status, got.header)
		}
	})
	t.Run("origin list", func(t *testing.T) {
		s := newTestServer(t, Config{CORSOrigin: "https://a.example, https://b.example/"}, Deps{})
		got := do(t, s, http.MethodGet, "/api/v1/capabilities", map[string]string{"Origin": "https://b.example"})
		if got.header.Get("Access-Control-Allow-Origin") != "https://b.example" || got.header.Get("Vary") != "Origin" {
			t.Errorf("listed origin: %v", got.header)
		}
		got = do(t, s, http.MethodGet, "/api/v1/capabilities", map[string]string{"Origin": "https://evil.example"})
		if got.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("unlisted origin got %q", got.header.Get("Access-Control-Allow-Origin"))
		}
	})
	t.Run("single origin is static", func(t *testing.T) {
		s := newTestServer(t, Config{CORSOrigin: "https://a.example"}, Deps{})
		got := do(t, s, http.MethodGet, "/api/v1/capabilities", nil)
		if got.header.Get("Access-Control-Allow-Origin") != "https://a.example" || got.header.Get("Vary") != "Origin" {
			t.Errorf("single origin: %v", got.header)
		}
	})
}

func TestHealth(t *testing.T) {
	st := storetest.New(t)
	now := time.Unix(1_800_000_000, 0)
	s := newTestServer(t, Config{Now: func() time.Time { return now }}, Deps{Store: st})
	if got := do(t, s, http.MethodGet, "/healthz", nil); got.status != http.StatusOK || got.body != `{"status":"ok"}`+"\n" {
		t.Errorf("healthy: %d %s", got.status, got.body)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// A pass answers for a second, so a flood of checks is not a flood of
	// probes; then the store is probed again.
	if got := do(t, s, http.MethodGet, "/healthz", nil); got.status != http.StatusOK {
		t.Errorf("within a second of a pass: %d", got.status)
	}
	now = now.Add(healthCacheTTL)
	if got := do(t, s, http.MethodGet, "/healthz", nil); got.status != http.StatusServiceUnavailable || got.body != `{"status":"unavailable"}`+"\n" {
		t.Errorf("closed store: %d %s", got.status, got.body)
	}
}

func TestPanicBecomesJSON500WithCORS(t *testing.T) {
	s := newTestServer(t, Config{CORSOrigin: "*"}, Deps{})
	h := s.cors.middleware(s.recoverPanics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })))
	got := do(t, h, http.MethodGet, "/api/v1/anything", nil)
	if got.status != http.StatusInternalServerError || got.body != `{"success":false,"error":{"code":"INTERNAL_ERROR","message":"服务器内部错误"}}`+"\n" {
		t.Errorf("panic: %d %s", got.status, got.body)
	}
	if got.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("panic response lacks CORS headers: %v", got.header)
	}
}

// http.ErrAbortHandler is net/http's own way to abort a response: it goes
// on up, unlogged and unanswered.
func TestAbortHandlerPanicPassesThrough(t *testing.T) {
	s := newTestServer(t, Config{}, Deps{})
	h := s.recoverPanics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	rec := httptest.NewRecorder()
	defer func() {
		if v := recover(); v != http.ErrAbortHandler || rec.Body.Len() != 0 {
			t.Errorf("recovered %v, body %q", v, rec.Body)
		}
	}()
	h.ServeHTTP(rec, newRequest(http.MethodGet, "/api/v1/anything", "", nil))
	t.Error("the panic did not pass through")
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := newTestServer(t, Config{ClientToken: "tok"}, Deps{Metrics: reg})
	do(t, s, http.MethodGet, "/api/v1/capabilities", map[string]string{"X-Client-Token": "tok"})
	if got := do(t, s, http.MethodGet, "/metrics", nil); got.status != http.StatusUnauthorized {
		t.Errorf("metrics without token = %d", got.status)
	}
	got := do(t, s, http.MethodGet, "/metrics", map[string]string{"Authorization": "Bearer tok"})
	want := `amsg_http_requests_total{code="200",method="GET",route="/api/v1/capabilities"} 1`
	if got.status != http.StatusOK || !strings.Contains(got.body, want) {
		t.Errorf("metrics = %d, want a line %q in\n%s", got.status, want, got.body)
	}
}

// signBearer makes an amsg-instant style token: HS256 over header.payload.
func signBearer(key string, claims string) string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	body := enc.EncodeToString([]byte(claims))
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(head + "." + body))
	return head + "." + body + "." + enc.EncodeToString(m.Sum(nil))
}

func TestSignTokenRoundTrip(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	token, err := SignToken("k", "phone", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifyBearer("Bearer "+token, "k", now.Add(59*time.Minute)); err != nil {
		t.Errorf("fresh token refused: %v", err)
	}
	if _, err := verifyBearer("Bearer "+token, "k", now.Add(time.Hour)); err == nil {
		t.Error("expired token accepted")
	}
	if _, err := verifyBearer("Bearer "+token, "other", now); err == nil {
		t.Error("token accepted under another key")
	}
	if _, err := SignToken("", "x", now, time.Hour); err == nil {
		t.Error("signed without a key")
	}
	longest, err := SignToken("k", "phone", now, MaxTokenTTL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifyBearer("Bearer "+longest, "k", now); err != nil {
		t.Errorf("a token of the longest lifetime refused: %v", err)
	}
	if _, err := SignToken("k", "x", now, MaxTokenTTL+time.Second); err == nil {
		t.Error("signed a token for longer than MaxTokenTTL")
	}
}

// signBearerWithHeader signs claims under a header of the caller's choice.
func signBearerWithHeader(key, header, claims string) string {
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(claims))
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(signed))
	return signed + "." + enc.EncodeToString(m.Sum(nil))
}

func TestVerifyBearer(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	valid := signBearer("k", `{"tid":"t","typ":"tenant","iat":1,"exp":1700000100,"v":1}`)
	for _, c := range []struct {
		name, header, want string
	}{
		{"valid", "Bearer " + valid, ""},
		{"lower-case scheme, padding", "bearer " + valid + "=", ""},
		{"missing", "", "缺少 Authorization: Bearer <token>"},
		{"bare scheme", "Bearer ", "缺少 Authorization: Bearer <token>"},
		{"basic", "Basic abc", "缺少 Authorization: Bearer <token>"},
		{"two parts", "Bearer a.b", "token 格式无效"},
		{"bad signature encoding", "Bearer a.b.!!!", "token 签名格式无效"},
		{"wrong key", "Bearer " + signBearer("other", `{"v":1,"exp":1700000100}`), "token 签名无效"},
		{"payload not JSON", "Bearer " + signBearer("k", `not json`), "token payload 解析失败"},
		{"expired", "Bearer " + signBearer("k", `{"v":1,"exp":1700000000}`), "token 已过期或无效"},
		{"string version", "Bearer " + signBearer("k", `{"v":"1","exp":1700000100}`), "token 已过期或无效"},
		{"no exp", "Bearer " + signBearer("k", `{"v":1}`), "token 已过期或无效"},
		// Issue 22: a correctly signed token that outlives anything amsg
		// token mints, or names another algorithm, is refused.
		{"exp 1e308", "Bearer " + signBearer("k", `{"v":1,"exp":1e308}`), "token 已过期或无效"},
		{"exp a second past the longest lifetime", "Bearer " + signBearer("k",
			fmt.Sprintf(`{"v":1,"exp":%d}`, now.Add(MaxTokenTTL).Unix()+1)), "token 已过期或无效"},
		{"alg none", "Bearer " + signBearerWithHeader("k", `{"alg":"none","typ":"JWT"}`, `{"v":1,"exp":1700000100}`), "token 格式无效"},
		{"alg HS512", "Bearer " + signBearerWithHeader("k", `{"alg":"HS512"}`, `{"v":1,"exp":1700000100}`), "token 格式无效"},
		{"no alg", "Bearer " + signBearerWithHeader("k", `{"typ":"JWT"}`, `{"v":1,"exp":1700000100}`), "token 格式无效"},
		{"header not JSON", "Bearer " + signBearerWithHeader("k", `HS256`, `{"v":1,"exp":1700000100}`), "token 格式无效"},
	} {
		_, err := verifyBearer(c.header, "k", now)
		var apiErr *Error
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", c.name, err)
		case c.want != "" && (!errors.As(err, &apiErr) || apiErr.Code != "UNAUTHORIZED" || apiErr.Message != c.want || apiErr.Status != http.StatusUnauthorized):
			t.Errorf("%s: got %v, want UNAUTHORIZED %q", c.name, err, c.want)
		}
	}
}

// FuzzVerifyBearer: any Authorization header is refused with a 401 value or
// accepted, never a panic, and an accepted token is bound to its key.
func FuzzVerifyBearer(f *testing.F) {
	now := time.Unix(1_700_000_000, 0)
	for _, seed := range []string{
		"Bearer " + signBearer("k", `{"tid":"t","typ":"tenant","iat":1,"exp":1700000100,"v":1}`),
		"bearer " + signBearer("k", `{"exp":1e300,"v":1.0}`),
		"Bearer " + signBearer("k", `{"exp":"1700000100","v":"1"}`),
		"Bearer " + signBearer("k", `[]`),
		"Bearer a.b.c", "Bearer ..", "Bearer", "Basic xyz", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		_, err := verifyBearer(header, "k", now)
		var e *Error
		switch {
		case err == nil:
			if _, err := verifyBearer(header, "k2", now); err == nil {
				t.Fatalf("%q accepted under two keys", header)
			}
		case !errors.As(err, &e) || e.Status != http.StatusUnauthorized:
			t.Fatalf("%q: %v, want a 401", header, err)
		}
	})
}
