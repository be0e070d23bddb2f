package api

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"amsg/llm"
	"amsg/loop"

	"github.com/prometheus/client_golang/prometheus"
)

// Made-up methods all count as "other": 10 000 of them add one series.
func TestMetricsFoldUnknownMethods(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := newTestServer(t, Config{Limits: Limits{RateLimitOff: true}}, Deps{Metrics: reg})
	seriesBefore := countSeries(t, reg)
	for i := range 10_000 {
		method := fmt.Sprintf("M%dX%d", i, rand.Uint32())
		do(t, s, method, "/api/v1/nope"+method, nil)
	}
	// One series per status code the made-up requests got, and no more.
	if grown := countSeries(t, reg) - seriesBefore; grown > 4 {
		t.Fatalf("10 000 made-up methods added %d series", grown)
	}
}

func countSeries(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "amsg_http_") {
			n += len(f.GetMetric())
		}
	}
	return n
}

// The metrics token is compared whole: a Bearer token whose first seven
// bytes are anything passes only if the rest is the token.
func TestMetricsTokenComparedWhole(t *testing.T) {
	s := newTestServer(t, Config{ClientToken: "tok"}, Deps{Metrics: prometheus.NewRegistry()})
	for _, auth := range []string{"XXXXXXXtok", "Basic  tok", "Bearer tokX"} {
		if got := do(t, s, http.MethodGet, "/metrics", map[string]string{"Authorization": auth}); got.status != http.StatusUnauthorized {
			t.Errorf("Authorization %q = %d", auth, got.status)
		}
	}
	if got := do(t, s, http.MethodGet, "/metrics", map[string]string{"Authorization": "bearer tok"}); got.status != http.StatusOK {
		t.Errorf("the right token = %d", got.status)
	}
}

func TestRateLimitPerAddressAndUser(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := newTestServer(t, Config{Now: func() time.Time { return now },
		Limits: Limits{RequestsPerSecond: 1, Burst: 3, UserRequestsPerSecond: 1, UserBurst: 2}}, Deps{})
	from := func(addr, user string) response {
		req := newRequest(http.MethodGet, "/api/v1/capabilities", "", map[string]string{"X-User-Id": user})
		req.RemoteAddr = addr
		return serve(s, req)
	}
	for i := range 3 {
		if got := from("192.0.2.1:1000", ""); got.status != http.StatusOK {
			t.Fatalf("request %d = %d", i, got.status)
		}
	}
	got := from("192.0.2.1:1001", "")
	if got.status != http.StatusTooManyRequests || got.header.Get("Retry-After") != "1" ||
		!strings.Contains(got.body, `"code":"RATE_LIMITED"`) || !strings.Contains(got.body, `"limit":"requestsPerAddress"`) {
		t.Fatalf("over the address rate = %d %v %s", got.status, got.header, got.body)
	}
	if got := do(t, s, http.MethodGet, "/healthz", nil); got.status != http.StatusOK {
		t.Errorf("health checks are not limited: %d", got.status)
	}
	// Another address has its own bucket; a user who proves its id (an
	// encrypted body) is limited across addresses.
	proven := func(addr string) response {
		req := encryptedRequest(t, http.MethodPut, "/api/v1/push-subscription", testUserID, map[string]any{"subscription": "x"})
		req.RemoteAddr = addr
		return serve(s, req)
	}
	for i, addr := range []string{"192.0.2.2:1", "192.0.2.3:1"} {
		if got := proven(addr); got.status != http.StatusBadRequest {
			t.Fatalf("user request %d = %d %s", i, got.status, got.body)
		}
	}
	if got := proven("192.0.2.4:1"); got.status != http.StatusTooManyRequests || !strings.Contains(got.body, `"limit":"requestsPerUser"`) {
		t.Fatalf("over the user rate = %d %s", got.status, got.body)
	}
	now = now.Add(time.Second)
	if got := from("192.0.2.1:1002", ""); got.status != http.StatusOK {
		t.Errorf("a second later = %d", got.status)
	}
}

func TestRateLimitOff(t *testing.T) {
	s := newTestServer(t, Config{Limits: Limits{RateLimitOff: true, RequestsPerSecond: 1, Burst: 1}}, Deps{})
	for i := range 5 {
		if got := do(t, s, http.MethodGet, "/api/v1/capabilities", nil); got.status != http.StatusOK {
			t.Fatalf("request %d = %d", i, got.status)
		}
	}
}

func TestClientAddressTrustsOnlyNamedProxies(t *testing.T) {
	proxies, err := ParseTrustedProxies("10.0.0.0/8, 192.0.2.7")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ peer, xff, want string }{
		{"198.51.100.1:5", "203.0.113.9", "198.51.100.1"},                // not a proxy: its header is ignored
		{"10.1.1.1:5", "203.0.113.9", "203.0.113.9"},                     // a proxy names the client
		{"10.1.1.1:5", "1.1.1.1, 203.0.113.9, 192.0.2.7", "203.0.113.9"}, // spoofed first hop ignored
		{"192.0.2.7:5", "garbage, 203.0.113.9", "203.0.113.9"},
		{"10.1.1.1:5", "not-an-ip", "10.1.1.1"},
	}
	for _, tt := range tests {
		req := newRequest(http.MethodGet, "/", "", map[string]string{"X-Forwarded-For": tt.xff})
		req.RemoteAddr = tt.peer
		if got := clientAddress(req, proxies); got != netip.MustParseAddr(tt.want) {
			t.Errorf("peer %s, XFF %q: %s, want %s", tt.peer, tt.xff, got, tt.want)
		}
	}
	if _, err := ParseTrustedProxies("10.0.0.0/33"); err == nil {
		t.Error("a bad prefix parsed")
	}
}

// A rate limiter's map stays bounded however many addresses come.
func TestRateLimiterStaysBounded(t *testing.T) {
	now := time.Unix(0, 0)
	l := newRateLimiter(1, 1, func() time.Time { return now })
	for i := range maxRateKeys + 10 {
		l.allow(fmt.Sprint(i))
	}
	if len(l.buckets) > maxRateKeys {
		t.Fatalf("%d buckets", len(l.buckets))
	}
}

// Without --allow-private-llm a request's loopback apiUrl is refused
// before any call; text/plain bodies are refused.
func TestInstantLLMURLPolicy(t *testing.T) {
	f := newInstantFixture(t, Config{}, loop.AgentConfig{})
	f.s.cfg.LLMPolicy = llm.URLPolicy{}
	body := f.body(map[string]any{"pushSubscription": f.push.Subscribe()})
	got := post(f.s, "/api/v1/instant", jsonBody(t, body), jsonHeaders)
	if got.status != http.StatusBadRequest || !strings.Contains(got.body, `"code":"INVALID_API_URL"`) || !strings.Contains(got.body, "loopback") {
		t.Fatalf("loopback apiUrl = %d %s", got.status, got.body)
	}
	body["apiUrl"] = "http://169.254.169.254/latest/meta-data"
	if got := post(f.s, "/api/v1/instant", jsonBody(t, body), jsonHeaders); got.status != http.StatusBadRequest || !strings.Contains(got.body, "link-local") {
		t.Fatalf("metadata apiUrl = %d %s", got.status, got.body)
	}
	if got := post(f.s, "/api/v1/instant", jsonBody(t, body), map[string]string{"Content-Type": "text/plain"}); got.status != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain = %d %s", got.status, got.body)
	}
	if n := len(f.llm.Requests()); n != 0 {
		t.Fatalf("the LLM got %d calls", n)
	}
}

// Rounds over the concurrency caps get 429; a round whose client left runs
// on only while the orphans are under their cap.
func TestRoundGuard(t *testing.T) {
	g, err := newRoundGuard(Limits{MaxRounds: 4, MaxRoundsPerUser: 2, MaxRoundsPerAddress: 3, MaxOrphanRounds: 1, OrphanRoundTimeout: time.Hour}.withDefaults(), testLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	type client struct {
		r      *http.Request
		cancel context.CancelFunc
	}
	newClient := func() client {
		ctx, cancel := context.WithCancel(context.Background())
		return client{newRequest(http.MethodPost, "/api/v1/instant", "", nil).WithContext(ctx), cancel}
	}
	admitFrom := func(c client, owner, address string) (*round, *Error) {
		rd, err := g.admit(&discardWriter{header: http.Header{}}, c.r, owner, address)
		if err != nil {
			return nil, err.(*Error)
		}
		return rd, nil
	}
	admit := func(c client, owner string) (*round, *Error) {
		return admitFrom(c, owner, "192.0.2.1")
	}
	c1, c2, c3 := newClient(), newClient(), newClient()
	r1, _ := admit(c1, "a")
	r2, _ := admit(c2, "a")
	if _, e := admit(newClient(), "a"); e == nil || e.Status != http.StatusTooManyRequests {
		t.Fatalf("third round of one user: %v", e)
	}
	r3, _ := admit(c3, "b")
	// One address naming ever new users stops at its own cap (issue 22).
	if _, e := admit(newClient(), "c"); e == nil || e.Status != http.StatusTooManyRequests || e.Details.(map[string]any)["limit"] != "concurrentRoundsPerAddress" {
		t.Fatalf("round over the address cap: %v", e)
	}
	r4, _ := admitFrom(newClient(), "c", "192.0.2.2")
	if _, e := admitFrom(newClient(), "d", "192.0.2.3"); e == nil || e.Status != http.StatusTooManyRequests || e.Details.(map[string]any)["limit"] != "concurrentRounds" {
		t.Fatalf("round over the global cap: %v", e)
	}
	r4.end()
	// Two clients leave: one round runs on as the orphan, the other stops.
	c1.cancel()
	c2.cancel()
	var kept *round
	select {
	case <-r1.ctx.Done():
		kept = r2
	case <-r2.ctx.Done():
		kept = r1
	case <-time.After(10 * time.Second):
		t.Fatal("no round stopped when its client left with the orphans at their cap")
	}
	if kept.ctx.Err() != nil {
		t.Fatal("both orphaned rounds stopped; the cap is 1")
	}
	if r3.ctx.Err() != nil {
		t.Fatal("a round whose client stayed was stopped")
	}
	for _, rd := range []*round{r1, r2, r3} {
		rd.end()
	}
	c3.cancel()
	if rd, e := admit(newClient(), "a"); e != nil {
		t.Fatalf("after the rounds ended: %v", e)
	} else {
		rd.end()
	}
}

type discardWriter struct{ header http.Header }

func (d *discardWriter) Header() http.Header         { return d.header }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

// Finding 3's cron variant: a task whose apiUrl is internal would call it
// at every occurrence. It is refused when scheduled and when updated.
func TestTaskLLMURLPolicy(t *testing.T) {
	e := newTaskEnv(t, Config{})
	e.subscribe(t, testUserID)
	task := fixedTask(map[string]any{"messageType": "prompted", "userMessage": nil, "completePrompt": "hi",
		"apiUrl": "http://10.0.0.7:8080/admin", "apiKey": "k", "primaryModel": "m", "recurrenceType": "daily"})
	got := e.schedule(t, testUserID, task)
	if code, _ := errorOf(t, got.body); got.status != http.StatusBadRequest || code != "INVALID_API_URL" {
		t.Fatalf("internal apiUrl: %d %s", got.status, got.body)
	}
	task["apiUrl"] = "https://93.184.216.34/v1"
	got = e.schedule(t, testUserID, task)
	if got.status != http.StatusCreated {
		t.Fatalf("public apiUrl: %d %s", got.status, got.body)
	}
	var created struct{ UUID string }
	decodeData(t, got.body, &created)
	got = e.update(t, testUserID, created.UUID, map[string]any{"apiUrl": "http://[::1]:6379/"})
	if code, _ := errorOf(t, got.body); got.status != http.StatusBadRequest || code != "INVALID_API_URL" {
		t.Fatalf("update to an internal apiUrl: %d %s", got.status, got.body)
	}
}

// BenchmarkRateLimiterAllow is the cost the per-address limit adds to a
// request, over 10 000 client addresses.
func BenchmarkRateLimiterAllow(b *testing.B) {
	l := newRateLimiter(1e9, 1e9, time.Now)
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String()
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.allow(keys[i%len(keys)])
			i++
		}
	})
}

// Finding 4 of issue 22: 130 requests naming a victim's id (from other
// addresses, with or without the client token) spent the victim's budget
// and locked the victim out. Only requests that prove the id (an encrypted
// body that opens under the user key) count against it.
func TestNamingAUserDoesNotLockThemOut(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := newTestServer(t, Config{ClientToken: "client-token-0123", Now: func() time.Time { return now },
		Limits: Limits{UserRequestsPerSecond: 1, UserBurst: 100}}, Deps{})
	for i := range 130 {
		headers := map[string]string{"X-User-Id": testUserID, "X-Client-Token": "client-token-0123", "Content-Type": "application/json"}
		req := newRequest(http.MethodPost, "/api/v1/device-seen", `{"endpoint":"https://push.example/x"}`, headers)
		req.RemoteAddr = fmt.Sprintf("192.0.2.%d:1", i%100+1)
		if got := serve(s, req); got.status == http.StatusTooManyRequests {
			t.Fatalf("claim %d = %d %s", i, got.status, got.body)
		}
	}
	victim := func() response {
		req := encryptedRequest(t, http.MethodPut, "/api/v1/push-subscription", testUserID, map[string]any{"subscription": "x"})
		req.Header.Set("X-Client-Token", "client-token-0123")
		req.RemoteAddr = "198.51.100.7:1"
		return serve(s, req)
	}
	if got := victim(); got.status != http.StatusBadRequest {
		t.Fatalf("the victim after 130 claims of their id = %d %s", got.status, got.body)
	}
	// The victim's own proven requests still have a budget.
	for range 99 {
		victim()
	}
	if got := victim(); got.status != http.StatusTooManyRequests || !strings.Contains(got.body, `"limit":"requestsPerUser"`) {
		t.Fatalf("the user over their own rate = %d %s", got.status, got.body)
	}
}

// Issue 22, finding 3: storage quotas are per user id and ids are free, so
// one address is bounded too: in body bytes per hour, and in the distinct
// user ids it writes as per hour.
func TestAddressWriteBudgetAndNewUsers(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := newTestServer(t, Config{Now: func() time.Time { return now },
		Limits: Limits{WriteBytesPerAddressPerHour: 1000, NewUsersPerAddressPerHour: 3}}, Deps{})
	users := []string{testUserID, "123e4567-e89b-42d3-a456-426614174000", "9b2f1c3e-4d5a-4b6c-8d7e-0f1a2b3c4d5e", "0f8fad5b-d9cb-469f-a165-70867728950e"}
	post := func(addr, user, body string) response {
		req := newRequest(http.MethodPost, "/api/v1/device-seen", body, map[string]string{"X-User-Id": user, "Content-Type": "application/json"})
		req.RemoteAddr = addr
		return serve(s, req)
	}
	const small = `{"endpoint":"https://push.example/x"}`
	for _, u := range users[:3] {
		if got := post("192.0.2.1:1", u, small); got.status != http.StatusNotFound {
			t.Fatalf("user %s = %d %s", u, got.status, got.body)
		}
	}
	got := post("192.0.2.1:1", users[3], small)
	if got.status != http.StatusTooManyRequests || !strings.Contains(got.body, `"limit":"newUsersPerAddress"`) || got.header.Get("Retry-After") != "3600" {
		t.Fatalf("a fourth user id from one address = %d %v %s", got.status, got.header, got.body)
	}
	if got := post("192.0.2.1:1", users[0], small); got.status != http.StatusNotFound {
		t.Fatalf("a user the address already wrote as = %d %s", got.status, got.body)
	}
	if got := post("192.0.2.2:1", users[3], small); got.status != http.StatusNotFound {
		t.Fatalf("the fourth user from another address = %d %s", got.status, got.body)
	}
	// Bytes: what is left of 1000 after four small bodies, then nothing.
	big := `{"endpoint":"https://push.example/` + strings.Repeat("x", 700) + `"}`
	if got := post("192.0.2.1:1", users[0], big); got.status != http.StatusNotFound {
		t.Fatalf("a body within the byte budget = %d %s", got.status, got.body)
	}
	got = post("192.0.2.1:1", users[0], big)
	if got.status != http.StatusTooManyRequests || !strings.Contains(got.body, `"limit":"writeBytesPerAddress"`) {
		t.Fatalf("a body over the byte budget = %d %s", got.status, got.body)
	}
	if got := do(t, s, http.MethodGet, "/api/v1/capabilities", nil); got.status != http.StatusOK {
		t.Errorf("reads are not charged bytes: %d", got.status)
	}
	now = now.Add(time.Hour)
	if got := post("192.0.2.1:1", users[3], big); got.status != http.StatusNotFound {
		t.Fatalf("an hour later = %d %s", got.status, got.body)
	}
}

// Issue 22 §4: a Bearer token minted for the user (amsg token --subject
// <user id>) proves the request is that user, as an opened envelope does:
// such requests spend the user's bucket from any address, once a request
// even when the body is sealed too. A token minted for someone else, or
// for no one, proves nothing of the id it names, so it never spends (and
// cannot lock out) that user.
func TestABearerTokenForTheUserSpendsTheUsersBucket(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	const key = "signing-key-0123456789"
	s := newTestServer(t, Config{TokenSigningKey: key, Now: func() time.Time { return now },
		Limits: Limits{UserRequestsPerSecond: 1, UserBurst: 3}}, Deps{Instant: &Instant{Agent: loop.NewAgent(loop.AgentConfig{})}})
	mint := func(subject string) string {
		token, err := SignToken(key, subject, now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return "Bearer " + token
	}
	instant := func(i int, bearer string, sealed bool) response {
		var req *http.Request
		if sealed {
			req = encryptedRequest(t, http.MethodPost, "/api/v1/instant", testUserID, map[string]any{})
		} else {
			req = newRequest(http.MethodPost, "/api/v1/instant", `{}`, map[string]string{"X-User-Id": testUserID, "Content-Type": "application/json"})
		}
		req.Header.Set("Authorization", bearer)
		req.RemoteAddr = fmt.Sprintf("192.0.2.%d:1", i+1)
		return serve(s, req)
	}
	userLimited := func(got response) bool {
		return got.status == http.StatusTooManyRequests && strings.Contains(got.body, `"limit":"requestsPerUser"`)
	}
	for i, subject := range []string{"", "tenant-1", "123e4567-e89b-42d3-a456-426614174000", strings.ToUpper(testUserID)} {
		for j := range 5 {
			if got := instant(10*i+j, mint(subject), false); userLimited(got) {
				t.Fatalf("a token for %q naming the user, request %d: %d %s", subject, j, got.status, got.body)
			}
		}
	}
	own := mint(testUserID)
	// One sealed request with the user's token is charged once: two plain
	// ones still fit the burst of three, and the next is over it.
	if got := instant(100, own, true); userLimited(got) {
		t.Fatalf("a sealed request with the user's token: %d %s", got.status, got.body)
	}
	for i := range 2 {
		if got := instant(101+i, own, false); userLimited(got) {
			t.Fatalf("request %d with the user's token: %d %s", i, got.status, got.body)
		}
	}
	if got := instant(103, own, false); !userLimited(got) {
		t.Fatalf("a fourth request with the user's token within the second: %d %s", got.status, got.body)
	}
}
