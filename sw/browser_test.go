package sw_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"amsg/push"
	"amsg/store/usercrypt"
	"amsg/sw"
	"amsg/web/browsertest"
)

// testUserID and testUserKey are the client config the tests store for
// pushsubscriptionchange; the server decrypts with the same key, derived
// from testMasterKey as the amsg server derives it.
const (
	testUserID    = "123e4567-e89b-42d3-a456-426614174000"
	testMasterKey = "5c0f3a8e2d7b41c69e0a1f4b8d3c7e2a6b9f0d1c4e8a3b7f2d6c0e9a1b5f4c3d"
)

var testUserKey = func() usercrypt.Key {
	ring, err := usercrypt.NewKeyring(testMasterKey)
	if err != nil {
		panic(err)
	}
	return ring.UserKey(testUserID)
}()

// testServer serves the worker, the test page and the few API endpoints the
// worker talks to, over real loopback HTTP.
type testServer struct {
	*httptest.Server
	worker  atomic.Pointer[http.Handler]
	offline atomic.Bool  // drop every connection, as an unreachable server would
	status  atomic.Int32 // status of POST /api/v1/echo

	mu     sync.Mutex
	puts   []subscriptionPut
	echos  []string
	seen   []deviceSeen
	outbox []map[string]any // GET /api/v1/outbox entries, served in one encrypted page
	// receipts are the bodies of POST /api/v1/receipts.
	receipts []string
}

// deviceSeen is one POST /api/v1/device-seen as the server saw it.
type deviceSeen struct {
	UserID, ClientToken, Endpoint string
}

// subscriptionPut is one PUT /api/v1/push-subscription as the server saw it.
type subscriptionPut struct {
	Header http.Header
	Body   struct {
		Subscription push.Subscription `json:"subscription"`
		UpdatedAt    int64             `json:"updatedAt"`
	}
	Err string // why the request was refused, if it was
}

func newTestServer(t *testing.T, version string) *testServer {
	t.Helper()
	s := &testServer{}
	s.setVersion(version)
	s.status.Store(http.StatusOK)
	icon := pngBytes(t)
	page := http.FileServerFS(os.DirFS("testdata/page"))

	mux := http.NewServeMux()
	mux.HandleFunc("GET /sw.js", func(w http.ResponseWriter, r *http.Request) { (*s.worker.Load()).ServeHTTP(w, r) })
	mux.HandleFunc("GET /app-shell.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `["/", "/page.js", "/icon-192x192.png", "https://elsewhere.example/x.js", "/api/v1/never"]`)
	})
	for _, path := range []string{"/icon-192x192.png", "/badge-72x72.png", "/avatar.png"} {
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			w.Write(icon)
		})
	}
	mux.HandleFunc("PUT /api/v1/push-subscription", s.putSubscription)
	mux.HandleFunc("POST /api/v1/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		status := int(s.status.Load())
		if status < 300 {
			s.mu.Lock()
			s.echos = append(s.echos, string(body))
			s.mu.Unlock()
		}
		w.WriteHeader(status)
	})
	mux.HandleFunc("POST /api/v1/device-seen", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Endpoint string `json:"endpoint"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.seen = append(s.seen, deviceSeen{r.Header.Get("X-User-Id"), r.Header.Get("X-Client-Token"), body.Endpoint})
		s.mu.Unlock()
		io.WriteString(w, `{"success":true,"data":{"seen":true}}`)
	})
	mux.HandleFunc("GET /api/v1/outbox", s.serveOutbox)
	mux.HandleFunc("POST /api/v1/receipts", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.receipts = append(s.receipts, string(body))
		s.mu.Unlock()
		io.WriteString(w, `{"success":true,"data":{"recorded":1,"duplicates":0}}`)
	})
	mux.Handle("GET /", page)

	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.offline.Load() {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *testServer) setVersion(version string) {
	h := sw.Handler(version)
	s.worker.Store(&h)
}

// putSubscription checks the request the way the amsg server does and
// decrypts the AES-256-GCM envelope with the user key.
func (s *testServer) putSubscription(w http.ResponseWriter, r *http.Request) {
	put := subscriptionPut{Header: r.Header.Clone()}
	defer func() {
		s.mu.Lock()
		s.puts = append(s.puts, put)
		s.mu.Unlock()
	}()
	body, err := io.ReadAll(r.Body)
	var env usercrypt.Envelope
	if err == nil {
		env, err = usercrypt.ParseEnvelope(body)
	}
	if err == nil {
		err = sealedLikeAmsgClient(env)
	}
	if err != nil {
		put.Err = "envelope: " + err.Error()
		http.Error(w, put.Err, http.StatusBadRequest)
		return
	}
	plain, err := testUserKey.Open(env)
	if err == nil {
		err = json.Unmarshal(plain, &put.Body)
	}
	if err != nil {
		put.Err = "decrypt: " + err.Error()
		http.Error(w, put.Err, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"success":true,"data":{"updatedAt":1}}`)
}

// serveOutbox answers as the amsg server does, encrypted with the user
// key: the entries after ?since= (entry ids are their positions, from 1).
func (s *testServer) serveOutbox(w http.ResponseWriter, r *http.Request) {
	since, _ := strconv.Atoi(r.URL.Query().Get("since"))
	s.mu.Lock()
	var entries []map[string]any
	for i, e := range s.outbox {
		if i+1 > since {
			entries = append(entries, e)
		}
	}
	cursor := len(s.outbox)
	s.mu.Unlock()
	plain, _ := json.Marshal(map[string]any{"entries": entries, "cursor": cursor, "hasMore": false})
	env, _ := json.Marshal(map[string]any{"success": true, "encrypted": true, "version": 1, "data": testUserKey.Seal(plain)})
	w.Header().Set("Content-Type", "application/json")
	w.Write(env)
}

func (s *testServer) devicesSeen() []deviceSeen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]deviceSeen(nil), s.seen...)
}

func (s *testServer) subscriptionPuts() []subscriptionPut {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]subscriptionPut(nil), s.puts...)
}

func (s *testServer) echoed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.echos...)
}

// sealedLikeAmsgClient checks what usercrypt.Open tolerates but amsg-client
// never sends: every field is standard padded base64 and the tag 16 bytes.
func sealedLikeAmsgClient(env usercrypt.Envelope) error {
	for _, s := range []string{env.IV, env.EncryptedData} {
		if _, err := base64.StdEncoding.DecodeString(s); err != nil {
			return err
		}
	}
	tag, err := base64.StdEncoding.DecodeString(env.AuthTag)
	if err == nil && len(tag) != 16 {
		err = fmt.Errorf("authTag is %d bytes, want 16", len(tag))
	}
	return err
}

func pngBytes(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// openWorkerPage starts a browser on the test page and waits until the
// worker controls it.
func openWorkerPage(t *testing.T, srv *testServer) (*browsertest.Browser, *browsertest.Page) {
	t.Helper()
	b := browsertest.New(t, browsertest.Config{})
	b.GrantNotifications(srv.URL)
	p := b.NewPage()
	p.RecordWorkerMessages()
	p.Navigate(srv.URL + "/")
	p.WaitServiceWorker()
	return b, p
}

// envelope is a REI_AMSG_PUSH message as the page receives it.
type envelope struct {
	Type    string         `json:"type"`
	Event   string         `json:"event"`
	Payload map[string]any `json:"payload"`
}

func envelopes(t *testing.T, p *browsertest.Page) []envelope {
	t.Helper()
	var out []envelope
	for _, raw := range p.WorkerMessages() {
		var e envelope
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("page got a message that is not an envelope: %s", raw)
		}
		out = append(out, e)
	}
	return out
}

// envelopesFor returns the envelopes whose payload has messageId id.
func envelopesFor(t *testing.T, p *browsertest.Page, id string) []envelope {
	t.Helper()
	var out []envelope
	for _, e := range envelopes(t, p) {
		if e.Payload["messageId"] == id {
			out = append(out, e)
		}
	}
	return out
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// waitEnvelope waits until the page received the envelope of messageId id.
func waitEnvelope(t *testing.T, p *browsertest.Page, id string) envelope {
	t.Helper()
	p.WaitFor(`(window.__browsertestSWMessages || []).some((m) => m.payload && m.payload.messageId === ` + jsString(id) + `)`)
	return envelopesFor(t, p, id)[0]
}

// deliveryRecord is the worker's dedupe record of a key.
type deliveryRecord struct {
	Key                      string  `json:"key"`
	FirstSeenAt              float64 `json:"firstSeenAt"`
	ExpiresAt                float64 `json:"expiresAt"`
	Source                   string  `json:"source"`
	MessageKind              *string `json:"messageKind"`
	NotificationShown        bool    `json:"notificationShown"`
	NotificationStatePending bool    `json:"notificationStatePending"`
}

// waitSettled waits until the worker finished the first delivery of key
// (its notification state is written after showNotification settles) and
// returns the record.
func waitSettled(t *testing.T, p *browsertest.Page, key string) deliveryRecord {
	t.Helper()
	p.WaitFor(`amsgTest.deliveryRecord(` + jsString(key) + `).then((r) => r && r.notificationStatePending === false)`)
	var rec deliveryRecord
	p.Eval(`amsgTest.deliveryRecord(`+jsString(key)+`)`, &rec)
	return rec
}

func notificationsTagged(p *browsertest.Page, tag string) []browsertest.Notification {
	var out []browsertest.Notification
	for _, n := range p.Notifications() {
		if n.Tag == tag {
			out = append(out, n)
		}
	}
	return out
}

func TestWorkerRegistersAndControlsThePage(t *testing.T) {
	srv := newTestServer(t, "v-register")
	_, p := openWorkerPage(t, srv)

	var got struct {
		ScriptURL string `json:"scriptURL"`
		Scope     string `json:"scope"`
		Status    string `json:"status"`
	}
	p.Eval(`(async () => ({
		scriptURL: navigator.serviceWorker.controller.scriptURL,
		scope: (await navigator.serviceWorker.ready).scope,
		status: document.getElementById('status').textContent,
	}))()`, &got)
	if got.Status != "service worker ready" {
		t.Errorf("page status %q", got.Status)
	}
	if got.ScriptURL != srv.URL+"/sw.js" || got.Scope != srv.URL+"/" {
		t.Errorf("controller %s with scope %s, want %s/sw.js with scope %s/", got.ScriptURL, got.Scope, srv.URL, srv.URL)
	}
	var version string
	p.WorkerEval(`self.__amsgTest.version`, &version)
	if version != "v-register" {
		t.Errorf("worker version %q, want the one the handler stamped in", version)
	}
}

func TestPushPerKindAndShowMode(t *testing.T) {
	srv := newTestServer(t, "v-kinds")
	_, p := openWorkerPage(t, srv)

	tests := []struct {
		name    string
		payload map[string]any
		event   string
		shown   bool
	}{
		{"content", map[string]any{"messageKind": "content", "message": "hello", "contactName": "Rei"}, "rei-amsg-content-received", true},
		{"reasoning", map[string]any{"messageKind": "reasoning", "reasoningContent": "thinking"}, "rei-amsg-reasoning-received", false},
		// A tool request or an error by Web Push shows quietly even on a visible
		// page (amsg-sw shows neither), unless it names a display policy.
		{"tool_request", map[string]any{"messageKind": "tool_request", "toolCalls": []any{map[string]any{"id": "c1"}}}, "rei-amsg-tool-request-received", true},
		{"error", map[string]any{"messageKind": "error", "code": "LLM_CALL_FAILED", "message": "boom"}, "rei-amsg-error-received", true},
		{"legacy without kind", map[string]any{"message": "legacy"}, "rei-amsg-unknown-received", true},
		{"unknown kind", map[string]any{"messageKind": "status_update", "message": "x"}, "rei-amsg-unknown-received", false},
		{"malformed multipart is ordinary", map[string]any{"messageKind": "_multipart", "multipart": map[string]any{}, "chunk": 5}, "rei-amsg-unknown-received", false},
		{"top-level show is ignored", map[string]any{"messageKind": "reasoning", "reasoningContent": "r", "show": "always"}, "rei-amsg-reasoning-received", false},
		{"content show false", map[string]any{"messageKind": "content", "message": "m", "notification": map[string]any{"show": false}}, "rei-amsg-content-received", false},
		{"content show auto", map[string]any{"messageKind": "content", "message": "m", "notification": map[string]any{"show": "auto"}}, "rei-amsg-content-received", true},
		{"content show true is the kind default", map[string]any{"messageKind": "content", "message": "m", "notification": map[string]any{"show": true}}, "rei-amsg-content-received", true},
		{"reasoning show always", map[string]any{"messageKind": "reasoning", "reasoningContent": "r", "notification": map[string]any{"show": "always"}}, "rei-amsg-reasoning-received", true},
		{"error show always", map[string]any{"messageKind": "error", "code": "X", "message": "m", "notification": map[string]any{"show": "always"}}, "rei-amsg-error-received", true},
		{"tool_request show never is no policy", map[string]any{"messageKind": "tool_request", "toolCalls": []any{1}, "notification": map[string]any{"show": "never"}}, "rei-amsg-tool-request-received", true},
		{"content when-hidden on a visible page", map[string]any{"messageKind": "content", "message": "m", "notification": map[string]any{"show": "when-hidden"}}, "rei-amsg-content-received", false},
		{"tool_request when-hidden on a visible page", map[string]any{"messageKind": "tool_request", "toolCalls": []any{1}, "notification": map[string]any{"show": "when-hidden"}}, "rei-amsg-tool-request-received", false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := p.With(t)
			id := "m-kind-" + string(rune('a'+i))
			tt.payload["messageId"] = id
			p.DeliverPushJSON(tt.payload)

			env := waitEnvelope(t, p, id)
			if env.Type != "REI_AMSG_PUSH" || env.Event != tt.event {
				t.Errorf("envelope type %q event %q, want REI_AMSG_PUSH %q", env.Type, env.Event, tt.event)
			}
			if !reflect.DeepEqual(env.Payload, roundTrip(t, tt.payload)) {
				t.Errorf("envelope payload %v, want the push unchanged: %v", env.Payload, tt.payload)
			}
			rec := waitSettled(t, p, id)
			if rec.NotificationShown != tt.shown || rec.Source != "webpush" {
				t.Errorf("record shown=%v source=%q, want shown=%v source=webpush", rec.NotificationShown, rec.Source, tt.shown)
			}
			if got := len(notificationsTagged(p, id)); got != b2i(tt.shown) {
				t.Errorf("%d notifications tagged %s, want %d", got, id, b2i(tt.shown))
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func roundTrip(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWhenHiddenShowsWithoutWindows(t *testing.T) {
	srv := newTestServer(t, "v-hidden")
	_, p := openWorkerPage(t, srv)

	// Headless pages are always visible; with no window at all the
	// when-hidden branch renders.
	p.Navigate("about:blank")
	p.DeliverPushJSON(map[string]any{
		"messageKind": "tool_request", "messageId": "m-hidden-1", "toolCalls": []any{map[string]any{"id": "c"}},
		"notification": map[string]any{"show": "when-hidden", "title": "Tool needed"},
	})
	// Come back only once the worker is done, or the page would be visible.
	p.WaitForWorker(`self.__amsgTest.deliveryRecord('m-hidden-1').then((r) => r && !r.notificationStatePending)`)
	p.Navigate(srv.URL + "/")
	p.WaitServiceWorker()
	n := p.WaitNotification("m-hidden-1", func(n browsertest.Notification) bool { return n.Tag == "m-hidden-1" })
	if n.Title != "Tool needed" {
		t.Errorf("title %q", n.Title)
	}
	if rec := waitSettled(t, p, "m-hidden-1"); !rec.NotificationShown {
		t.Error("record says the notification was not shown")
	}
}

func TestNotificationFieldChains(t *testing.T) {
	srv := newTestServer(t, "v-chains")
	_, p := openWorkerPage(t, srv)
	abs := func(path string) string { return srv.URL + path }

	tests := []struct {
		name    string
		payload map[string]any
		want    browsertest.Notification // Data without payload; payload is checked apart
	}{
		{
			name: "directive wins",
			payload: map[string]any{
				"messageKind": "content", "messageId": "m-chain-1", "title": "T0", "body": "B0", "message": "M0",
				"icon": "/i0.png", "badge": "/b0.png", "tag": "t0", "renotify": false, "requireInteraction": false, "silent": false,
				"data": map[string]any{"ignored": true},
				"notification": map[string]any{
					"title": "T1", "body": "B1", "icon": "/avatar.png", "badge": "/badge-72x72.png", "tag": "chain-1",
					"renotify": true, "requireInteraction": true, "silent": true, "data": map[string]any{"url": "/chat/1"},
				},
			},
			want: browsertest.Notification{Title: "T1", Body: "B1", Icon: abs("/avatar.png"), Badge: abs("/badge-72x72.png"), Tag: "chain-1",
				Renotify: true, RequireInteraction: true, Silent: true, Data: map[string]any{"url": "/chat/1"}},
		},
		{
			name: "top-level fields",
			payload: map[string]any{
				"messageKind": "content", "messageId": "m-chain-2", "title": "T2", "body": "B2", "message": "M2",
				"icon": "/avatar.png", "badge": "/b2.png", "tag": "chain-2", "renotify": true, "requireInteraction": true, "silent": true,
				"data": map[string]any{"k": "v"}, "notification": map[string]any{"renotify": false},
			},
			want: browsertest.Notification{Title: "T2", Body: "B2", Icon: abs("/avatar.png"), Badge: abs("/b2.png"), Tag: "chain-2",
				Renotify: false, RequireInteraction: true, Silent: true, Data: map[string]any{"k": "v"}},
		},
		{
			name:    "contact name, message, avatar, messageId",
			payload: map[string]any{"messageKind": "content", "messageId": "m-chain-3", "contactName": "Rei", "message": "  hi  ", "avatarUrl": "/avatar.png"},
			want: browsertest.Notification{Title: "From Rei", Body: "  hi  ", Icon: abs("/avatar.png"), Badge: abs("/badge-72x72.png"), Tag: "m-chain-3",
				Data: map[string]any{}},
		},
		{
			name:    "blank body and defaults",
			payload: map[string]any{"messageKind": "content", "messageId": "m-chain-4", "message": " \n "},
			want: browsertest.Notification{Title: "New notification", Body: "New message", Icon: abs("/icon-192x192.png"), Badge: abs("/badge-72x72.png"),
				Tag: "m-chain-4", Data: map[string]any{}},
		},
		{
			name:    "directive data keeps its own payload",
			payload: map[string]any{"messageKind": "content", "messageId": "m-chain-5", "message": "x", "notification": map[string]any{"tag": "chain-5", "data": map[string]any{"payload": "mine"}}},
			want: browsertest.Notification{Title: "New notification", Body: "x", Icon: abs("/icon-192x192.png"), Badge: abs("/badge-72x72.png"),
				Tag: "chain-5", Data: map[string]any{"payload": "mine"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := p.With(t)
			p.DeliverPushJSON(tt.payload)
			waitSettled(t, p, tt.payload["messageId"].(string))
			got := p.WaitNotification(tt.want.Tag, func(n browsertest.Notification) bool { return n.Tag == tt.want.Tag })
			if _, own := tt.want.Data["payload"]; !own {
				if !reflect.DeepEqual(got.Data["payload"], roundTrip(t, tt.payload)) {
					t.Errorf("data.payload %v, want the whole push", got.Data["payload"])
				}
				delete(got.Data, "payload")
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("notification\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}

	t.Run("plain text push", func(t *testing.T) {
		p := p.With(t)
		var before int
		p.WorkerEval(`self.__amsgTest.pushesSettled()`, &before)
		p.DeliverPush("hello plain")
		p.WaitForWorker(`self.__amsgTest.pushesSettled() > ` + strconv.Itoa(before))
		n := p.WaitNotification("with body hello plain", func(n browsertest.Notification) bool { return n.Body == "hello plain" })
		if n.Title != "New notification" || !strings.HasPrefix(n.Tag, "rei-") {
			t.Errorf("plain push shown as %+v", n)
		}
	})

	t.Run("builder rules", func(t *testing.T) {
		p := p.With(t)
		var got struct {
			NonObject, Empty, NullDirective struct {
				Title   string         `json:"title"`
				Options map[string]any `json:"options"`
			}
		}
		p.WorkerEval(`(() => {
			const t = self.__amsgTest;
			return {
				nonObject: t.buildNotification(42, 1000),
				empty: t.buildNotification({}, 1234),
				nullDirective: t.buildNotification({ notification: null, renotify: true, body: 7 }, 1),
			};
		})()`, &got)
		if got.NonObject.Title != "New notification" || got.NonObject.Options["body"] != "42" || got.NonObject.Options["tag"] != nil {
			t.Errorf("non-object payload: %+v", got.NonObject)
		}
		if got.Empty.Options["tag"] != "rei-1234" || got.Empty.Options["body"] != "New message" {
			t.Errorf("empty payload: %+v", got.Empty)
		}
		if got.NullDirective.Options["renotify"] != true || got.NullDirective.Options["body"] != "New message" {
			t.Errorf("null directive: %+v", got.NullDirective)
		}
	})
}

func TestDeliverAckAndDedupe(t *testing.T) {
	srv := newTestServer(t, "v-deliver")
	_, p := openWorkerPage(t, srv)

	payload := `{messageKind: 'content', messageId: 'm-deliver-1', message: 'via sse'}`
	var ack map[string]any
	p.Eval(`amsgTest.deliver(`+payload+`, {source: 'sse', requestId: 'r1'})`, &ack)
	if want := map[string]any{"ok": true, "duplicate": false, "key": "m-deliver-1", "requestId": "r1"}; !reflect.DeepEqual(ack, want) {
		t.Errorf("first ack %v, want %v", ack, want)
	}
	p.Eval(`amsgTest.deliver(`+payload+`, {requestId: 'r2'})`, &ack)
	if want := map[string]any{"ok": true, "duplicate": true, "key": "m-deliver-1", "requestId": "r2"}; !reflect.DeepEqual(ack, want) {
		t.Errorf("second ack %v, want %v", ack, want)
	}
	if rec := waitSettled(t, p, "m-deliver-1"); rec.Source != "sse" || !rec.NotificationShown {
		t.Errorf("record %+v, want source sse and shown", rec)
	}

	// The Web Push backup of the same message is swallowed. Pushes are handled
	// in order, so once a later push is through, the backup is too.
	p.DeliverPushJSON(map[string]any{"messageKind": "content", "messageId": "m-deliver-1", "message": "backup"})
	p.DeliverPushJSON(map[string]any{"messageKind": "content", "messageId": "m-deliver-2", "message": "later"})
	waitEnvelope(t, p, "m-deliver-2")
	waitSettled(t, p, "m-deliver-2")
	if n := len(envelopesFor(t, p, "m-deliver-1")); n != 1 {
		t.Errorf("%d envelopes for m-deliver-1, want 1", n)
	}
	if ns := notificationsTagged(p, "m-deliver-1"); len(ns) != 1 || ns[0].Body != "via sse" {
		t.Errorf("notifications for m-deliver-1: %+v, want the first only", ns)
	}

	ack = nil
	p.Eval(`amsgTest.ask({type: 'REI_AMSG_DELIVER', requestId: 'r3'})`, &ack)
	if want := map[string]any{"ok": false, "error": "[rei-standard-amsg-sw] REI_AMSG_DELIVER requires payload", "requestId": "r3"}; !reflect.DeepEqual(ack, want) {
		t.Errorf("ack without payload %v, want %v", ack, want)
	}
	var keys []string
	p.WorkerEval(`['m', 'i', 'd', 'x'].map((k) => self.__amsgTest.dedupeKeyOf(({
		m: { messageId: ' a ', id: 'b' }, i: { messageId: '  ', id: 'b' }, d: { messageId: 5, dedupeKey: 'c' }, x: { id: '' },
	})[k]) ?? null)`, &keys)
	if want := []string{"a", "b", "c", ""}; !reflect.DeepEqual(keys, want) {
		t.Errorf("dedupe keys %q, want %q", keys, want)
	}
}

func TestDuplicateRepairsMissingNotification(t *testing.T) {
	srv := newTestServer(t, "v-repair")
	_, p := openWorkerPage(t, srv)

	// The page saw the message over SSE while visible: no notification.
	var ack map[string]any
	p.Eval(`amsgTest.deliver({messageKind: 'content', messageId: 'm-repair', message: 'hi', notification: {show: 'when-hidden'}}, {source: 'sse'})`, &ack)
	if rec := waitSettled(t, p, "m-repair"); rec.NotificationShown {
		t.Fatal("shown on a visible page")
	}
	// The backup push arrives when no window is open: it repairs the banner.
	p.Navigate("about:blank")
	p.DeliverPushJSON(map[string]any{"messageKind": "content", "messageId": "m-repair", "message": "hi", "notification": map[string]any{"show": "when-hidden"}})
	p.WaitForWorker(`self.__amsgTest.deliveryRecord('m-repair').then((r) => r.notificationShown)`)
	p.Navigate(srv.URL + "/")
	p.WaitServiceWorker()
	p.WaitNotification("m-repair", func(n browsertest.Notification) bool { return n.Tag == "m-repair" })
	if n := len(envelopesFor(t, p, "m-repair")); n != 0 {
		t.Errorf("the duplicate was broadcast %d times", n)
	}
}

// The backup push of a reply the page already showed carries no directive;
// the first delivery's when-hidden still governs it: quiet while a window is
// visible, a notification once none is.
func TestDuplicateKeepsTheFirstDeliverysPolicy(t *testing.T) {
	srv := newTestServer(t, "v-policy")
	_, p := openWorkerPage(t, srv)

	var ack map[string]any
	p.Eval(`amsgTest.deliver({messageKind: 'content', messageId: 'm-policy', message: 'read here', notification: {show: 'when-hidden'}}, {source: 'sse'})`, &ack)
	if rec := waitSettled(t, p, "m-policy"); rec.NotificationShown {
		t.Fatal("shown on a visible page")
	}
	backup := map[string]any{"messageKind": "content", "messageId": "m-policy", "message": "read here"}
	p.DeliverPushJSON(backup)
	p.DeliverPushJSON(map[string]any{"messageKind": "content", "messageId": "m-policy-later", "message": "x"})
	waitSettled(t, p, "m-policy-later") // pushes are handled in order: the backup is through
	if ns := notificationsTagged(p, "m-policy"); len(ns) != 0 {
		t.Fatalf("the backup of a reply on a visible page notified: %+v", ns)
	}
	if rec := waitSettled(t, p, "m-policy"); rec.NotificationShown {
		t.Fatal("the record says shown")
	}

	// Redelivered with no window open, it notifies after all.
	p.Navigate("about:blank")
	p.DeliverPushJSON(backup)
	p.WaitForWorker(`self.__amsgTest.deliveryRecord('m-policy').then((r) => r.notificationShown)`)
	p.Navigate(srv.URL + "/")
	p.WaitServiceWorker()
	p.WaitNotification("m-policy", func(n browsertest.Notification) bool { return n.Tag == "m-policy" })
}

func TestDedupeSurvivesWorkerRestart(t *testing.T) {
	srv := newTestServer(t, "v-restart")
	_, p := openWorkerPage(t, srv)

	first := map[string]any{"messageKind": "content", "messageId": "m-restart-1", "message": "once"}
	p.DeliverPushJSON(first)
	waitSettled(t, p, "m-restart-1")
	p.WaitNotification("m-restart-1", func(n browsertest.Notification) bool { return n.Tag == "m-restart-1" })
	p.CloseNotifications()

	p.WorkerEval(`self.__restartProbe = true`, nil)
	p.StopAllWorkers()
	p.DeliverPushJSON(first)
	p.DeliverPushJSON(map[string]any{"messageKind": "content", "messageId": "m-restart-2", "message": "after"})
	waitSettled(t, p, "m-restart-2")
	p.WaitNotification("m-restart-2", func(n browsertest.Notification) bool { return n.Tag == "m-restart-2" })

	var probe bool
	p.WorkerEval(`self.__restartProbe === true`, &probe)
	if probe {
		t.Fatal("the worker kept its memory: it was not restarted")
	}
	if ns := notificationsTagged(p, "m-restart-1"); len(ns) != 0 {
		t.Errorf("the redelivered push showed again after a restart: %+v", ns)
	}
	if n := len(envelopesFor(t, p, "m-restart-1")); n != 1 {
		t.Errorf("%d envelopes for m-restart-1, want 1", n)
	}
}

// multipartChunks splits payload as amsg-instant's buildMultipartPushPayloads
// does: raw UTF-8 byte slices, base64url without padding.
func multipartChunks(t *testing.T, payload any, id string, size int, createdAt int64) []map[string]any {
	t.Helper()
	data, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	total := (len(data) + size - 1) / size
	var chunks []map[string]any
	for i := 0; i < total; i++ {
		end := min((i+1)*size, len(data))
		chunks = append(chunks, map[string]any{
			"messageKind": "_multipart",
			"multipart": map[string]any{
				"version": 1, "id": id, "index": i + 1, "total": total, "encoding": "json-utf8-base64url",
				"originalMessageKind": "content", "createdAt": createdAt, "ttlMs": 60000,
			},
			"chunk": base64.RawURLEncoding.EncodeToString(data[i*size : end]),
		})
	}
	return chunks
}

func TestMultipartReassembly(t *testing.T) {
	srv := newTestServer(t, "v-multipart")
	_, p := openWorkerPage(t, srv)
	var now int64
	p.Eval(`Date.now()`, &now)

	// Seven-byte slices cut the multi-byte characters apart.
	original := map[string]any{"messageKind": "content", "messageId": "m-mp-1", "contactName": "Rei", "message": "长消息：早上好，今天也要加油哦！"}
	chunks := multipartChunks(t, original, "mp_test_1", 7, now)
	if len(chunks) < 5 {
		t.Fatalf("only %d chunks", len(chunks))
	}
	// Out of order, with a worker restart half-way: the set lives in IndexedDB.
	half := len(chunks) / 2
	for i := len(chunks) - 1; i >= half; i-- {
		p.DeliverPushJSON(chunks[i])
	}
	p.WaitFor(`amsgTest.pendingMultipart('mp_test_1').then((r) => r && r.receivedCount === ` + strconv.Itoa(len(chunks)-half) + `)`)
	p.StopAllWorkers()
	p.DeliverPushJSON(chunks[half-1]) // a duplicate chunk later on must not count twice
	for i := half - 1; i >= 0; i-- {
		p.DeliverPushJSON(chunks[i])
	}

	waitSettled(t, p, "m-mp-1")
	n := p.WaitNotification("m-mp-1", func(n browsertest.Notification) bool { return n.Tag == "m-mp-1" })
	if n.Body != original["message"] || n.Title != "From Rei" {
		t.Errorf("reassembled notification %+v", n)
	}
	env := waitEnvelope(t, p, "m-mp-1")
	if env.Event != "rei-amsg-content-received" || !reflect.DeepEqual(env.Payload, roundTrip(t, original)) {
		t.Errorf("reassembled envelope %+v", env)
	}

	// A redelivered last chunk does not restore the set again, and an expired
	// chunk is reported.
	p.DeliverPushJSON(chunks[len(chunks)-1])
	stale := multipartChunks(t, map[string]any{"messageKind": "content", "message": "old"}, "mp_stale", 1000, now-120000)[0]
	p.DeliverPushJSON(stale)
	p.WaitFor(`window.__browsertestSWMessages.some((m) => m.event === 'rei-amsg-multipart-expired')`)
	for _, e := range envelopes(t, p) {
		switch e.Event {
		case "rei-amsg-multipart-expired":
			want := map[string]any{"id": "mp_stale", "received": 0.0, "total": 1.0, "originalMessageKind": "content", "reason": "ttl-expired"}
			if !reflect.DeepEqual(e.Payload, want) {
				t.Errorf("expiry notice %v, want %v", e.Payload, want)
			}
		case "rei-amsg-content-received":
			if e.Payload["messageId"] != "m-mp-1" {
				t.Errorf("unexpected content envelope %v", e.Payload)
			}
		}
	}
	if got := len(envelopesFor(t, p, "m-mp-1")); got != 1 {
		t.Errorf("%d envelopes for the reassembled message, want 1", got)
	}

	var rejected []bool
	p.WorkerEval(`[
		{ version: 2 }, { encoding: 'gzip' }, { id: '' }, { index: 0 }, { index: 3, total: 2 }, { total: 129, index: 1 }, { total: 1.5 },
	].map((m) => self.__amsgTest.normalizeMultipartChunk({ messageKind: '_multipart', chunk: 'YQ',
		multipart: { version: 1, id: 'x', index: 1, total: 2, encoding: 'json-utf8-base64url', ...m } }) === null)
	.concat(self.__amsgTest.normalizeMultipartChunk({ messageKind: '_multipart', chunk: 'Y!',
		multipart: { version: 1, id: 'x', index: 1, total: 1, encoding: 'json-utf8-base64url' } }) === null)`, &rejected)
	for i, r := range rejected {
		if !r {
			t.Errorf("invalid chunk %d accepted", i)
		}
	}
	var ttl struct {
		TTLMs     int64 `json:"ttlMs"`
		ExpiresAt int64 `json:"expiresAt"`
	}
	// The sender's TTL is kept (a scheduled push's chunks may wait days at the
	// push service for an offline phone), up to the four weeks a push
	// service holds a message; without one, 60 s.
	for _, c := range []struct {
		ttlMs, want string
		wantMs      int64
	}{
		{"999999", "sender's", 999999},
		{"2419200000", "four weeks", 2419200000},
		{"99999999999", "capped at four weeks", 2419200000},
		{"undefined", "default", 60000},
		{"-5", "default for a bad one", 60000},
	} {
		p.WorkerEval(`self.__amsgTest.normalizeMultipartChunk({ messageKind: '_multipart', chunk: 'YQ==',
		multipart: { version: 1, id: 'x', index: 1, total: 1, encoding: 'json-utf8-base64url', createdAt: 1000, ttlMs: `+c.ttlMs+` } }, 5)`, &ttl)
		if ttl.TTLMs != c.wantMs || ttl.ExpiresAt != 1000+c.wantMs {
			t.Errorf("ttlMs %s (%s): got %+v, want %d", c.ttlMs, c.want, ttl, c.wantMs)
		}
	}
}

func TestNotificationClickTarget(t *testing.T) {
	srv := newTestServer(t, "v-click")
	_, p := openWorkerPage(t, srv)
	o := srv.URL

	var urls []string
	p.WorkerEval(`[
		{ url: '/chat/7?x=1' },
		{ url: '  /schedule  ', payload: { sessionId: 's' } },
		{ url: 'https://evil.example/phish' },
		{ url: 'http://[bad' },
		{ payload: { sessionId: 'sess_task_1@2 x' } },
		{ payload: { sessionId: '   ' } },
		{},
		null,
	].map((d) => self.__amsgTest.clickTargetURL(d, self.location.origin))`, &urls)
	want := []string{o + "/chat/7?x=1", o + "/schedule", o + "/", o + "/", o + "/#/chat/sess_task_1%402%20x", o + "/", o + "/", o + "/"}
	if !reflect.DeepEqual(urls, want) {
		t.Errorf("click targets\n got %q\nwant %q", urls, want)
	}

	var picked []string
	p.WorkerEval(`(() => {
		const c = [{ url: '`+o+`/#/a', focused: false }, { url: '`+o+`/#/b', focused: true }, { url: '`+o+`/other', focused: true }];
		const pick = (u) => (self.__amsgTest.pickClientForURL(c, u) || { url: 'none' }).url;
		return [pick('`+o+`/#/a'), pick('`+o+`/#/c'), pick('`+o+`/'), pick('`+o+`/nowhere')];
	})()`, &picked)
	if want := []string{o + "/#/a", o + "/#/b", o + "/#/b", "none"}; !reflect.DeepEqual(picked, want) {
		t.Errorf("picked windows %q, want %q", picked, want)
	}

	// With the real window list: the open test page is focused for its own
	// URL, and a new window is planned for another.
	type plan struct {
		URL       string  `json:"url"`
		ClientURL *string `json:"clientURL"`
	}
	var same, other plan
	p.WorkerEval(`self.__amsgTest.planClick({ payload: { sessionId: 'abc' } })`, &same)
	p.WorkerEval(`self.__amsgTest.planClick({ url: '/elsewhere' })`, &other)
	if same.URL != o+"/#/chat/abc" || same.ClientURL == nil || *same.ClientURL != o+"/" {
		t.Errorf("click on the chat of the open page: %+v", same)
	}
	if other.URL != o+"/elsewhere" || other.ClientURL != nil {
		t.Errorf("click on another page: %+v", other)
	}
}

func TestPushSubscriptionChangeRegistersTheNewSubscription(t *testing.T) {
	srv := newTestServer(t, "v-subchange")
	_, p := openWorkerPage(t, srv)

	const vapidKey = "BEl62iUYgUivxIkv69yViEuiBIa-Ib9-SkvMeAtA3LFgDzkrxZJjSgSnfckjBJuBkr3qBUYIHBQFLXYp5Nksh8U"
	config := map[string]any{"apiBase": "/api/v1/", "userId": testUserID, "userKeyHex": testUserKey.Hex(), "clientToken": "tok-1", "vapidPublicKey": vapidKey}
	cfgJSON, _ := json.Marshal(config)
	p.Eval(`amsgTest.writeClientConfig(`+string(cfgJSON)+`)`, nil)

	// The worker's own subscribe never settles offline: stub it inside the
	// worker, recording the key it was asked to use.
	p.WorkerEval(`(() => {
		self.__subscribeKeys = [];
		PushManager.prototype.subscribe = async function (options) {
			const key = btoa(String.fromCharCode(...new Uint8Array(options.applicationServerKey))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
			self.__subscribeKeys.push(key + (options.userVisibleOnly ? '' : ' (not userVisibleOnly)'));
			const json = { endpoint: 'https://push.example/sub/' + self.__subscribeKeys.length, expirationTime: null, keys: { p256dh: 'pk', auth: 'au' } };
			return { ...json, toJSON: () => json };
		};
	})()`, nil)

	var endpoint string
	p.WorkerEval(`self.__amsgTest.renewSubscription(null, null).then((s) => s.endpoint)`, &endpoint)
	oldKey := `Uint8Array.from([4, ...Array(64).fill(7)]).buffer`
	p.WorkerEval(`self.__amsgTest.renewSubscription({ options: { applicationServerKey: `+oldKey+` } }, null).then((s) => s.endpoint)`, nil)
	var keys []string
	p.WorkerEval(`self.__subscribeKeys`, &keys)
	wantOld := base64.RawURLEncoding.EncodeToString(append([]byte{4}, bytes.Repeat([]byte{7}, 64)...))
	if !reflect.DeepEqual(keys, []string{vapidKey, wantOld}) {
		t.Errorf("subscribed with keys %q, want the stored VAPID key, then the old subscription's key", keys)
	}

	puts := srv.subscriptionPuts()
	if len(puts) != 2 {
		t.Fatalf("server got %d subscription PUTs, want 2", len(puts))
	}
	for i, put := range puts {
		if put.Err != "" {
			t.Fatalf("PUT %d refused: %s", i, put.Err)
		}
		for name, value := range map[string]string{
			"Content-Type": "application/json", "X-User-Id": testUserID, "X-Payload-Encrypted": "true",
			"X-Encryption-Version": "1", "X-Client-Token": "tok-1",
		} {
			if got := put.Header.Get(name); got != value {
				t.Errorf("PUT %d: %s = %q, want %q", i, name, got, value)
			}
		}
		want := push.Subscription{Endpoint: "https://push.example/sub/" + string(rune('1'+i)), Keys: push.SubscriptionKeys{P256dh: "pk", Auth: "au"}}
		if !reflect.DeepEqual(put.Body.Subscription, want) || put.Body.UpdatedAt <= 0 {
			t.Errorf("PUT %d body %+v, want subscription %+v and an updatedAt", i, put.Body, want)
		}
	}
	if endpoint != puts[0].Body.Subscription.Endpoint {
		t.Errorf("renewSubscription returned %s", endpoint)
	}
}

func TestRequestQueue(t *testing.T) {
	srv := newTestServer(t, "v-queue")
	_, p := openWorkerPage(t, srv)

	type result struct {
		Type    string `json:"type"`
		OK      bool   `json:"ok"`
		QueueID int    `json:"queueId"`
		Error   string `json:"error"`
	}
	var res result
	p.Eval(`amsgTest.enqueue({url: '/api/v1/echo', body: {n: 1}, headers: {'X-Test': 1, 'X-Null': null}})`, &res)
	if res.Type != "REI_QUEUE_RESULT" || !res.OK || res.QueueID <= 0 {
		t.Fatalf("enqueue reply %+v", res)
	}
	if got := srv.echoed(); !reflect.DeepEqual(got, []string{`{"n":1}`}) {
		t.Errorf("server got %q", got)
	}

	// While the server fails, requests wait in order; a flush sends them.
	srv.status.Store(http.StatusServiceUnavailable)
	p.Eval(`amsgTest.enqueue({url: '/api/v1/echo', body: 'two'})`, &res)
	p.Eval(`amsgTest.enqueue({url: '/api/v1/echo', body: 'three'})`, &res)
	var pending []struct {
		Method  string            `json:"method"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	p.Eval(`amsgTest.outbox()`, &pending)
	if len(pending) != 2 || pending[0].Body != "two" || pending[0].Method != "POST" {
		t.Fatalf("outbox %+v, want two waiting POSTs", pending)
	}
	srv.status.Store(http.StatusOK)
	p.Eval(`amsgTest.flush()`, nil)
	p.WaitFor(`amsgTest.outbox().then((o) => o.length === 0)`)
	if got := srv.echoed(); !reflect.DeepEqual(got, []string{`{"n":1}`, "two", "three"}) {
		t.Errorf("server got %q", got)
	}

	p.Eval(`amsgTest.enqueue({method: 'post'})`, &res)
	if res.OK || res.Error != "request.url is required" {
		t.Errorf("enqueue without url: %+v", res)
	}
	var norm map[string]any
	p.WorkerEval(`self.__amsgTest.normalizeQueuedRequest({url: ' /x ', method: 'get', body: {a: 1}, headers: {'Content-Type': 'text/plain', X: 2}})`, &norm)
	if want := map[string]any{"url": "/x", "method": "GET", "headers": map[string]any{"content-type": "text/plain", "x": "2"}}; !reflect.DeepEqual(norm, want) {
		t.Errorf("normalised GET %v, want %v", norm, want)
	}
}

func TestOfflineShellAndUpdate(t *testing.T) {
	srv := newTestServer(t, "v1")
	b, p := openWorkerPage(t, srv)

	var cached []string
	p.WaitFor(`caches.has('amsg-shell-v1')`)
	p.Eval(`caches.open('amsg-shell-v1').then((c) => c.keys()).then((ks) => ks.map((r) => new URL(r.url).pathname).sort())`, &cached)
	if want := []string{"/", "/icon-192x192.png", "/page.js"}; !reflect.DeepEqual(cached, want) {
		t.Errorf("precached %q, want %q (same-origin, no /api/)", cached, want)
	}

	// With the server unreachable, the shell still loads and registers.
	srv.offline.Store(true)
	p.Navigate(srv.URL + "/?from=offline")
	p.WaitFor(`document.getElementById('status').textContent === 'service worker ready'`)
	for _, e := range b.TakeConsoleErrors() {
		if !strings.Contains(e, "ERR_") && !strings.Contains(e, "Failed to fetch") {
			t.Errorf("unexpected console error offline: %s", e)
		}
	}
	srv.offline.Store(false)

	// A new build: the browser installs the new worker, which takes over at
	// once and drops the old shell cache.
	srv.setVersion("v2")
	p.Eval(`navigator.serviceWorker.getRegistration('/').then((r) => r.update())`, nil)
	p.WaitFor(`caches.has('amsg-shell-v2').then((has) => has && caches.has('amsg-shell-v1').then((old) => !old))`)
	var version string
	p.WorkerEval(`self.__amsgTest.version`, &version)
	if version != "v2" {
		t.Errorf("running worker version %q, want v2", version)
	}
}

func TestReopensForceClosedDatabase(t *testing.T) {
	srv := newTestServer(t, "v-closed")
	_, p := openWorkerPage(t, srv)

	p.DeliverPushJSON(map[string]any{"messageKind": "content", "messageId": "m-closed-1", "message": "before"})
	waitSettled(t, p, "m-closed-1")
	// Clearing site data force-closes the worker's cached connections; the
	// next push must reopen them rather than fail on a dead handle.
	p.ClearSiteData("indexeddb")
	p.DeliverPushJSON(map[string]any{"messageKind": "content", "messageId": "m-closed-1", "message": "after"})
	rec := waitSettled(t, p, "m-closed-1")
	if !rec.NotificationShown {
		t.Error("the push after the close was not shown")
	}
	n := p.WaitNotification("m-closed-1", func(n browsertest.Notification) bool { return n.Tag == "m-closed-1" && n.Body == "after" })
	if n.Title != "New notification" {
		t.Errorf("notification %+v", n)
	}
}
